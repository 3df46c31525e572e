"""Repository JSON and cards (repo_files.py + strict_json.py): config, tokenizer, adapter files, README front
matter, each read under the file name that gives it its role; MLflow's MLmodel and diffusers' model_index.json
(framework_code.py); a stable-baselines3 zip's `data` JSON, whose `:serialized:` values are scanned as pickles
(sb3_data.py)."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.framework_code import FrameworkCodeScanner
    from wscan.scanners.repo_files import ModelCardScanner, RepoJsonScanner
    from wscan.scanners.sb3_data import Sb3DataScanner
    from wscan.strict_json import JsonRejected, loads_strict

JSON = [RepoJsonScanner()]
CARD = [ModelCardScanner()]
FRAMEWORK = [FrameworkCodeScanner()]
SB3 = [Sb3DataScanner()]
NAMES = ("config.json", "tokenizer_config.json", "adapter_config.json")


def one_input(data: bytes) -> None:
    harness.expect((JsonRejected,), lambda: loads_strict(data))
    for name in NAMES:
        harness.drive(JSON, data, name)
    harness.drive(CARD, data, "README.md")
    harness.drive(FRAMEWORK, data, "MLmodel")
    harness.drive(FRAMEWORK, data, "model_index.json")
    harness.drive(SB3, data, "data")


if __name__ == "__main__":
    fuzz(one_input)
