"""PT2 archives (pt2.py): an exported program's graph JSON (operators, guard code) and its tensor configs."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.pt2 import Pt2GraphScanner, guard_problem, raw_tensor_members

GRAPH = [Pt2GraphScanner()]
CONTEXT = {"container": "pt2"}
CONFIGS = ("m/data/weights/model_weights_config.json", "m/data/constants/model_constants_config.json")


def one_input(data: bytes) -> None:
    harness.drive(GRAPH, data, "m/models/model.json", context=CONTEXT)
    guard_problem(data.decode("utf-8", "replace"))
    raw_tensor_members("m", CONFIGS, lambda _: data)


if __name__ == "__main__":
    fuzz(one_input)
