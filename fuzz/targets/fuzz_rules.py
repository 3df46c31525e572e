"""Rule packs (wscan/rules: YAML load, schema validation, rule building, judging observations).

The built-in packs are swapped for an empty folder so that each input is the only pack: a bad pack must be a
UsageError (exit 2, with file and line), and a pack that loads must judge observations without raising.
"""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    import wscan.rules
    from wscan.config import Config
    from wscan.errors import UsageError
    from wscan.model import Location, Observation
    from wscan.rules import RuleSet

FOLDER = harness.scratch_dir()
EMPTY = FOLDER / "builtin"
EMPTY.mkdir()
wscan.rules.builtin_rules_dir = lambda: EMPTY
PACK = FOLDER / "pack.yaml"
CONFIG = Config(rule_files=(PACK,))
WHERE = Location("model.pkl", "archive/data.pkl", 12)
OBSERVATIONS = [
    Observation("pickle.call", WHERE, {"module": "os", "name": "system", "callable": "os.system"}),
    Observation("pickle.import", WHERE, {"callable": "torch._utils._rebuild_tensor_v2", "count": 3}),
    Observation("scan.limit", Location("a.zip"), {"limit": "max-depth", "detail": "nested", "truncated": True}),
    Observation("template.attribute", Location("tokenizer_config.json"), {"name": "__globals__", "line": 1}),
]


def one_input(data: bytes) -> None:
    PACK.write_bytes(data)
    try:
        rules = RuleSet.load(CONFIG)
    except UsageError:
        return
    for rule in rules.rules:
        rule.render(OBSERVATIONS[0])
    rules.judge(OBSERVATIONS)
    rules.info()


if __name__ == "__main__":
    fuzz(one_input)
