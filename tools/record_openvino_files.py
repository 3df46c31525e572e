"""Keep OpenVINO IR models as test data: what `ov.save_model` writes, and hostile variants of it, each with what
OpenVINO's own `read_model` (then compile and infer on CPU) did with it.

Why: OpenVINO is not a test dependency (its wheel is 60 MB). The benign models are built with OpenVINO's opset API
and saved by `ov.save_model`; each hostile variant is one of them with one thing changed in its XML. Every model is
then loaded in a fresh process, and what happened is written to the folder's README.

Run where openvino and numpy are installed, in a virtualenv of its own, from the project root:
    python tools/record_openvino_files.py tests/data/openvino
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

LOAD = """
import sys, numpy as np, openvino as ov
core = ov.Core()
try:
    model = core.read_model(sys.argv[1])
    compiled = core.compile_model(model, "CPU")
    inputs = [np.ones(i.get_shape(), i.get_element_type().to_dtype()) for i in compiled.inputs]
    compiled(inputs)
except BaseException as exc:
    print(f"refused: {type(exc).__name__}: {str(exc).strip().splitlines()[-1][:120]}")
else:
    print("loaded and ran")
"""


def benign(folder: Path) -> list[Path]:
    import numpy as np
    import openvino as ov
    from openvino import opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([1, 64], np.float32, name="x")
    w = ops.constant(rng.standard_normal((64, 32)).astype(np.float32))
    b = ops.constant(np.ones(32, np.float16))
    y = ops.relu(ops.add(ops.matmul(x, w, False, False), ops.convert(b, np.float32)))
    dense = ov.Model([y], [x], "dense")
    # Packed weights as weight compression writes them: u4 and i4 values and a u1 mask, converted to f32.
    packed = [ops.convert(ops.constant(rng.integers(0, 2, (64, 32)).astype(np.uint8), dtype=ov.Type(kind)),
                          np.float32) for kind in ("u4", "i4", "u1")]
    mixed = ops.add(ops.add(ops.matmul(x, packed[0], False, False), ops.matmul(x, packed[1], False, False)),
                    ops.matmul(x, packed[2], False, False))
    written = []
    for name, model, fp16 in (("dense", dense, False), ("dense-fp16", dense, True),
                              ("packed", ov.Model([mixed], [x], "packed"), False)):
        path = folder / f"{name}.xml"
        ov.save_model(model, str(path), compress_to_fp16=fp16)
        written.append(path)
    return written


def _edit(pattern: str, replacement: str) -> Callable[[str], str]:
    def change(xml: str) -> str:
        changed, count = re.subn(pattern, replacement, xml, count=1)
        assert count == 1, pattern
        return changed

    return change


CHANGES: dict[str, Callable[[str], str]] = {
    "const-past-end": _edit(r'offset="0" size="8192"', 'offset="4096" size="8192"'),
    "const-size-not-shape": _edit(r'shape="64, 32" offset="0" size="8192"', 'shape="64, 32" offset="0" size="4096"'),
    "const-offset-not-a-number": _edit(r'offset="0"', 'offset="0x10"'),
    "unknown-element-type": _edit(r'element_type="f32" shape="64, 32"', 'element_type="f99" shape="64, 32"'),
    "doctype": _edit(r'<\?xml version="1.0"\?>', '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "aaaa">]>'),
    "cut-short": lambda xml: xml[: len(xml) // 2],
}


def hostile(folder: Path, source: Path) -> list[Path]:
    xml = source.read_text()
    written = []
    for name, change in CHANGES.items():
        path = folder / f"{name}.xml"
        path.write_text(change(xml))
        shutil.copyfile(source.with_suffix(".bin"), path.with_suffix(".bin"))
        written.append(path)
    missing = folder / "weights-missing.xml"  # the XML alone
    missing.write_text(xml)
    return [*written, missing]


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    (folder / "hostile").mkdir(parents=True, exist_ok=True)
    made = benign(folder)
    made += hostile(folder / "hostile", folder / "dense.xml")
    rows = []
    for path in made:
        result = subprocess.run([sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, timeout=300)
        lines = [line for line in result.stdout.splitlines() if line.startswith(("loaded", "refused"))]
        outcome = lines[-1] if lines else f"crashed (exit {result.returncode})"
        rows.append(f"| `{path.relative_to(folder)}` | {outcome} |")
    import openvino

    readme = ["# OpenVINO IR models", "",
              f"Written by `tools/record_openvino_files.py` with OpenVINO {openvino.__version__} (`ov.save_model`);",
              "each loaded by `Core.read_model`, compiled for CPU and run on ones in a fresh process.", "",
              "| model | read_model, compile, infer |", "|---|---|", *rows, ""]
    (folder / "README.md").write_text("\n".join(readme))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
