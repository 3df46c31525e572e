"""YAML configs for Hydra and NeMo (config_targets.py): the YAML event stream and the target walk, under a
.yaml name and under a name taken only for a `_target_` key."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness
    import yaml  # noqa: F401  (the scanner imports it on first use)

    from wscan.scanners.config_targets import ConfigTargetScanner

SCANNERS = [ConfigTargetScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "model_config.yaml")
    harness.drive(SCANNERS, data, "hparams")


if __name__ == "__main__":
    fuzz(one_input)
