"""The built-in packs are validated here, not on every run: a scan loads them without the JSON Schema check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wscan.config import Config
from wscan.errors import UsageError
from wscan.model import Severity
from wscan.rules import COMPILED_PACKS, RuleSet, builtin_packs, builtin_rules_dir
from wscan.rules.loader import load_pack

PACKS = sorted(builtin_rules_dir().glob("*.yaml"))


def test_there_are_packs() -> None:
    assert len(PACKS) >= 17


@pytest.mark.parametrize("path", PACKS, ids=[p.name for p in PACKS])
def test_builtin_pack_matches_the_schema(path: Path) -> None:
    assert load_pack(path, validate=True) == load_pack(path, validate=False)


def test_a_user_pack_is_still_validated(tmp_path: Path) -> None:
    pack = tmp_path / "mine.yaml"
    pack.write_text("pack: mine\nrules:\n  - id: X-1\n    severity: loud\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"mine\.yaml:3: rules/0: .name. is a required property"):
        load_pack(pack)


JSON_PACKS = [p for p in PACKS if p.read_text(encoding="utf-8").startswith("{")]


def test_the_generated_allowlists_are_json() -> None:
    assert {p.name for p in JSON_PACKS} >= {"allow-keras.yaml", "allow-sklearn.yaml", "known-architectures.yaml"}


@pytest.mark.parametrize("path", JSON_PACKS, ids=[p.name for p in JSON_PACKS])
def test_a_json_pack_reads_the_same_as_yaml(path: Path) -> None:
    # A scan reads these with json (C speed); a user reading them as YAML must see the very same pack.
    import json

    import yaml

    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == yaml.safe_load(text) == load_pack(path, validate=False)


# --- the compiled packs (tools/compile_rules.py) -------------------------------------------------------


def test_the_compiled_packs_are_fresh() -> None:
    """Run `python tools/compile_rules.py` after editing a pack: a stale entry only slows start-up, but it
    should never ship."""
    import hashlib
    import json

    compiled = json.loads((builtin_rules_dir() / COMPILED_PACKS).read_bytes())
    assert sorted(compiled) == [p.name for p in PACKS]
    for path in PACKS:
        assert compiled[path.name]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), path.name
        assert compiled[path.name]["pack"] == load_pack(path, validate=False), path.name
    assert [pack for _, pack in builtin_packs()] == [load_pack(p, validate=False) for p in PACKS]


def _edited_rules(tmp_path: Path) -> Path:
    """A copy of the built-in rules with one rule's severity changed in its YAML, compiled file untouched."""
    folder = tmp_path / "rules"
    shutil.copytree(builtin_rules_dir(), folder)
    pickle_pack = folder / "pickle.yaml"
    text = pickle_pack.read_text(encoding="utf-8")
    rule = load_pack(pickle_pack)["rules"][0]
    start = text.index(f"id: {rule['id']}")
    severity = text.index("severity:", start)
    line_end = text.index("\n", severity)
    pickle_pack.write_text(text[:severity] + "severity: info" + text[line_end:], encoding="utf-8")
    return folder


def test_an_edited_pack_is_read_from_its_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import wscan.rules

    shipped = RuleSet.load(Config())
    first_id = load_pack(builtin_rules_dir() / "pickle.yaml")["rules"][0]["id"]
    assert shipped.get(first_id) is not None and shipped.get(first_id).severity != Severity.INFO  # type: ignore[union-attr]
    folder = _edited_rules(tmp_path)
    monkeypatch.setattr(wscan.rules, "builtin_rules_dir", lambda: folder)
    edited = RuleSet.load(Config())
    assert edited.get(first_id).severity == Severity.INFO  # type: ignore[union-attr]
    assert edited.digest != shipped.digest
    (folder / COMPILED_PACKS).write_text("not json", encoding="utf-8")  # a damaged compiled file: same rules
    assert RuleSet.load(Config()).digest == edited.digest


def test_a_scan_with_the_builtin_rules_never_imports_yaml(tmp_path: Path) -> None:
    """PyYAML is imported only for a config file, a user pack or a model card: a tenth of start-up otherwise."""
    import subprocess
    import sys

    (tmp_path / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    code = (
        "import sys; from wscan.cli import main; main(['scan', '--no-progress', sys.argv[1]]);"
        "print('yaml' in sys.modules, file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert run.stderr.strip().splitlines()[-1] == "False"


def test_unless_makes_an_exception_to_a_rule(tmp_path: Path) -> None:
    """`unless:` conditions that all hold stop the rule; one that fails leaves it matching."""
    from wscan.model import Location, Observation

    pack = tmp_path / "mine.yaml"
    pack.write_text(
        "pack: mine\nlists:\n  quiet: [a.b]\nrules:\n  - id: MY-1\n    name: x\n    severity: high\n"
        "    summary: s\n    message: '{thing}'\n    match:\n      kind: my.kind\n      where:\n"
        "        thing: {matches: '^a'}\n      unless:\n        thing: {in-set: quiet}\n        n: {gte: 2}\n"
        "    metadata: {help: h}\n",
        encoding="utf-8",
    )
    rules = RuleSet.load(Config(rule_files=(pack,)))

    def judged(thing: str, n: int) -> bool:
        obs = Observation("my.kind", Location("f"), {"thing": thing, "n": n})
        return any(f.rule_id == "MY-1" for f in rules.judge([obs]))

    assert judged("a.c", 5) and judged("a.b", 1) and not judged("a.b", 2) and not judged("z", 5)



def test_unless_may_list_several_exceptions(tmp_path: Path) -> None:
    """A list under `unless:`: the rule does not match where all conditions of any one entry hold (WS-PKL-001's
    getattr and memmap exceptions); a dangling list name in any entry is still refused."""
    from wscan.model import Location, Observation

    pack = tmp_path / "mine.yaml"
    rule = (
        "pack: mine\nlists:\n  quiet: [a.b]\nrules:\n  - id: MY-2\n    name: x\n    severity: high\n"
        "    summary: s\n    message: '{thing}'\n    match:\n      kind: my.kind\n      where:\n"
        "        thing: {matches: '^a'}\n      unless:\n        - thing: {in-set: LIST}\n          n: {gte: 2}\n"
        "        - n: {equals: 0}\n    metadata: {help: h}\n"
    )
    pack.write_text(rule.replace("LIST", "quiet"), encoding="utf-8")
    rules = RuleSet.load(Config(rule_files=(pack,)))

    def judged(thing: str, n: int) -> bool:
        obs = Observation("my.kind", Location("f"), {"thing": thing, "n": n})
        return any(f.rule_id == "MY-2" for f in rules.judge([obs]))

    assert judged("a.c", 5) and judged("a.b", 1) and not judged("a.b", 2) and not judged("a.c", 0)
    pack.write_text(rule.replace("LIST", "missing"), encoding="utf-8")
    with pytest.raises(UsageError, match="unknown list 'missing'"):
        RuleSet.load(Config(rule_files=(pack,)))


# --- the generators (tools/) ---------------------------------------------------------------------------


def test_a_generator_names_the_modules_it_leaves_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pack made where an optional dependency is missing lacks that module's classes (category_encoders'
    GLMMEncoder, without statsmodels): the generator must say so, or the gap ships unnoticed."""
    package = tmp_path / "wscan_probe_library"
    (package / "broken_package").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kept.py").write_text("class Kept:\n    pass\n")
    (package / "needs_extra.py").write_text("import wscan_no_such_dependency\n\nclass Lost:\n    pass\n")
    (package / "broken_package" / "__init__.py").write_text("raise ImportError('no backend here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "tools"))
    from gen_allowlists import classes_under

    assert classes_under("wscan_probe_library") == ["wscan_probe_library.kept.Kept"]
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "not in the pack: wscan_probe_library.broken_package (ImportError: no backend here)",
        "not in the pack: wscan_probe_library.needs_extra (ModuleNotFoundError: No module named "
        "'wscan_no_such_dependency')",
    ]
