"""wscan next to its peers (picklescan, modelscan, modelaudit, fickling) on one realistic model folder.

Why: speed, memory and bytes read only mean something next to the tools people already run, and on the
same bytes; the verdict columns say what each tool actually caught, so a fast tool that misses is visible.

The workload (built once, deterministically, under DATA; --rebuild to force) is a multi-gigabyte model
folder: sharded safetensors with an index and config/tokenizer files, a PyTorch zip checkpoint, a legacy
(non-zip) torch checkpoint, a GGUF, an ONNX with initializers, 1,000 small .pkl/.npy/.json/.safetensors,
and nine hostile files mixed in among them. Ground truth is written beside the folder, never inside it.

Each tool runs in its own process from its own virtualenv (VENVS/<tool>, made by --setup with pinned
versions), started by a small launcher: wall time; CPU (user+sys) and peak RSS from os.wait4 of the tool
(descendants included); bytes read as the growth of the launcher's rchar (bench/measure.py) across the
tool's life, since the kernel adds a reaped child's read(2) bytes to its parent's /proc/self/io. Output
goes to files, so reading it is not counted.
The page cache is warmed first: every tool reads from memory, none pays for the disk alone.

Then wscan alone scans each large file of this workload and of one built at a quarter of the size, and
that whole smaller folder: does its peak RSS follow file size? (It must not: ONNX weights are skipped on
the wire since onnx_slim; before that the onnx package parsed them whole, 600 MiB for a 280 MB model.)

Run: python bench/peers.py --setup   (once: the peer virtualenvs)
     python bench/peers.py [--size-gb 3.5] [--rebuild] [--tools wscan,picklescan,...]
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import pickle
import pickletools
import random
import re
import statistics
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharded import build as build_shards

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("WSCAN_BENCH_DATA", "/work/bench-data"))
VENVS = Path(os.environ.get("WSCAN_BENCH_VENVS", "/work/bench-venvs"))
RESULTS = HERE / "results"
LAYOUT_VERSION = 3  # bump when the workload changes: older folders are rebuilt
TIMEOUT = 3600.0

# Pinned: the versions measured. torch goes in first, alone, so no peer can pull another build of it.
PEERS: dict[str, list[list[str]]] = {
    "picklescan": [["picklescan==1.0.5"]],
    # modelscan 0.8.8 calls numpy.lib.format._check_version, gone in NumPy 2: every .npy fails on NumPy 2.
    "modelscan": [["modelscan==0.8.8", "numpy==1.26.4"]],
    # The extras a user needs for this folder's formats (PyTorch, ONNX, safetensors).
    "modelaudit": [["torch==2.13.0"], ["modelaudit[onnx,safetensors,pytorch]==0.2.54"]],
    # fickling 0.1.12 imports typing_extensions without declaring it on Python < 3.12.
    "fickling": [["fickling==0.1.12", "typing_extensions"]],
}
FAIL_SEVERITIES = {"high", "critical"}  # wscan's default --fail-on
FLAGGED_MEANS = {
    "wscan": "a finding at high or critical (the default --fail-on; exit 1)",
    "picklescan": "a 'dangerous import ... FOUND' line (exit 1)",
    "modelscan": "any issue in its JSON report (exit 1)",
    "modelaudit": "an issue at warning or critical (exit 1); info issues are not counted",
    "fickling": "scan result not is_safe, i.e. above LIKELY_SAFE (what makes --check-safety fail)",
}


class Evil:
    """Pickles as os.system('echo pwned'): nothing runs when it is saved, only when it is loaded."""

    def __init__(self, func: Any = os.system, arg: Any = "echo pwned") -> None:
        self.func, self.arg = func, arg

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return self.func, (self.arg,)


# --- workload -------------------------------------------------------------------------------------


def _config_files(folder: Path) -> None:
    """What save_pretrained and a tokenizer write beside the shards."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "vocab_size": 32000,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.46.0",
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}, indent=2))
    vocab = {f"tok{i}": i for i in range(32000)}
    tokenizer = {"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": []}, "added_tokens": []}
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    template = (
        "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '</s>\\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
    )
    tok_config = {
        "tokenizer_class": "LlamaTokenizer",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "chat_template": template,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2))
    (folder / "special_tokens_map.json").write_text(json.dumps({"bos_token": "<s>", "eos_token": "</s>"}))


def _torch_checkpoint(path: Path, size: int, legacy: bool, extra: dict[str, Any] | None = None) -> None:
    """A state dict of zero float32 matrices, saved by torch itself (zip, or the legacy format)."""
    import torch

    cols, tensors = 1024, 32
    rows = max(1, size // tensors // (cols * 4))
    state: dict[str, Any] = {f"layer.{i}.weight": torch.zeros(rows, cols) for i in range(tensors)}
    state.update(extra or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path, _use_new_zipfile_serialization=not legacy)
    if legacy:
        _renumber_legacy(path)


def _binunicode(text: str) -> bytes:
    """A string as pickle protocol 2 writes it, to find it in the stream."""
    return b"X" + struct.pack("<I", len(text)) + text.encode()


def _renumber_legacy(path: Path) -> None:
    """torch's legacy writer names storages by memory address: renumber them so the bytes repeat.

    Every storage here holds the same number of zeros, so which data slot a key names does not matter.
    """
    data = path.read_bytes()
    stream = io.BytesIO(data)
    for _ in range(4):  # magic number, protocol, sys_info, the object
        for _ in pickletools.genops(stream):
            pass
    start = stream.tell()
    keys = [str(arg) for op, arg, _ in pickletools.genops(stream) if op.name == "BINUNICODE"]
    end = stream.tell()
    head = data[:start]
    order = sorted(keys, key=lambda k: head.find(_binunicode(k)))
    new = {k: f"{i:0{len(k)}d}" for i, k in enumerate(order)}
    for key in keys:
        head = head.replace(_binunicode(key), _binunicode(new[key]))
    listing = pickle.dumps(sorted(new.values()), protocol=2)
    assert len(listing) == end - start, "storage key list changed length"
    path.write_bytes(head + listing + data[end:])


def _gguf(path: Path, size: int, template: str) -> None:
    """A GGUF written by the gguf package's GGUFWriter, as llama.cpp's converters do."""
    import gguf
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("bench-llama")
    writer.add_context_length(4096)
    writer.add_block_count(32)
    writer.add_tokenizer_model("llama")
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]  # SentencePiece's byte fallback, as llama's vocabulary has
    tokens = ["<unk>", "<s>", "</s>", *byte_tokens, *(f"tok{i}" for i in range(32000 - 259))]
    writer.add_token_list(tokens)
    writer.add_token_types([2, 3, 3, *[6] * 256, *[1] * (len(tokens) - 259)])
    writer.add_chat_template(template)
    cols, tensors = 4096, 64
    rows = max(1, size // tensors // (cols * 2))
    for i in range(tensors):
        writer.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((rows, cols), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _onnx(path: Path, size: int, external: str | None = None) -> None:
    """A MatMul chain whose weights are initializers (or one external-data initializer)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    n = 256
    count = max(1, min(size, 1_500_000_000) // (n * n * 4))  # protobuf's 2 GB limit
    inits, nodes, prev = [], [], "x"
    for i in range(count):
        inits.append(numpy_helper.from_array(np.zeros((n, n), dtype=np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
    if external is not None:
        tensor = inits[0]
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", external), ("offset", "0"), ("length", str(n * n * 4))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, n])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.SerializeToString())


def _small_files(folder: Path, count: int) -> None:
    """Small benign artefacts, as runs and caches leave them: pickled metrics, arrays, JSON, tiny tensors."""
    import numpy as np
    from safetensors.numpy import save_file

    kinds = ["pkl", "npy", "json", "safetensors"]
    for kind in kinds:
        (folder / kind).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        rng = random.Random(i)
        kind = kinds[i % len(kinds)]
        path = folder / kind / f"item-{i:04d}.{kind}"
        values = [round(rng.random(), 6) for _ in range(rng.randint(8, 256))]
        if kind == "pkl":
            obj = {"step": i, "loss": values, "lr": 1e-4, "tags": ("train", f"run{i % 7}")}
            path.write_bytes(pickle.dumps(obj, protocol=4))
        elif kind == "npy":
            np.save(path, np.asarray(values, dtype=np.float32))
        elif kind == "json":
            path.write_text(json.dumps({"step": i, "metrics": {"loss": values[:16]}}))
        else:
            save_file({"w": np.asarray(values, dtype=np.float32)}, str(path), metadata={"format": "np"})


def _pickle_reduce(module: str, name: str, arg: str, protocol: int) -> bytes:
    """callable(arg) by GLOBAL (protocol 2) or STACK_GLOBAL (protocol 4), written by hand."""
    text = arg.encode()
    if protocol == 2:
        return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"X" + struct.pack("<I", len(text)) + text + b"\x85R."
    frame = b"\x8c" + bytes([len(module)]) + module.encode() + b"\x94\x8c" + bytes([len(name)]) + name.encode()
    frame += b"\x94\x93\x94\x8c" + bytes([len(text)]) + text + b"\x94\x85\x94R\x94."
    return b"\x80\x04\x95" + struct.pack("<Q", len(frame)) + frame


def _obfuscated_pickle() -> bytes:
    """getattr(__import__('os'), 'system')('id'): no dangerous name appears as a global."""
    imp = b"cbuiltins\n__import__\n(X\x02\x00\x00\x00ostR"
    return b"\x80\x02cbuiltins\ngetattr\n(" + imp + b"X\x06\x00\x00\x00systemtR(X\x02\x00\x00\x00idtR."


SSTI = "{{ ''.__class__.__mro__[1].__subclasses__() }}{% for m in messages %}{{ m['content'] }}{% endfor %}"


def _hostile(folder: Path) -> dict[str, str]:
    """Nine hostile files in the places benign ones live; returns path -> what it does."""
    import numpy as np

    found: dict[str, str] = {}

    def put(rel: str, what: str, data: bytes | None = None) -> Path:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if data is not None:
            path.write_bytes(data)
        found[rel] = what
        return path

    put("extras/pkl/item-0420.pkl", "pickle, GLOBAL os.system + REDUCE", _pickle_reduce("os", "system", "id", 2))
    put(
        "extras/pkl/item-0776.pkl",
        "pickle, STACK_GLOBAL builtins.exec",
        _pickle_reduce("builtins", "exec", "print(1)", 4),
    )
    put("extras/pkl/item-0612.pkl", "pickle, getattr(__import__('os'), 'system')", _obfuscated_pickle())
    put(
        "extras/safetensors/item-0555.safetensors",
        "pickle named .safetensors, builtins.eval",
        _pickle_reduce("builtins", "eval", "1+1", 4),
    )
    path = put("extras/npy/item-0333.npy", "NumPy object array whose pickle calls os.system")
    np.save(path, np.array([Evil()], dtype=object), allow_pickle=True)
    path = put("checkpoints/checkpoint-500/pytorch_model.bin", "PyTorch zip, data.pkl calls os.system")
    _torch_checkpoint(path, 1 << 20, legacy=False, extra={"hook": Evil()})
    path = put(
        "checkpoints/checkpoint-500/optimizer.pt",
        "legacy torch file calling subprocess.Popen (protocol 2 writes it as commands.Popen)",
    )
    _torch_checkpoint(path, 1 << 20, legacy=True, extra={"hook": Evil(subprocess.Popen, ["id"])})
    path = put("gguf/model-q8.gguf", "GGUF whose chat template walks __subclasses__ (Jinja SSTI)")
    _gguf(path, 1 << 20, SSTI)
    path = put("onnx/adapter.onnx", "ONNX initializer with external data at ../../../../etc/passwd")
    _onnx(path, 1 << 20, external="../../../../etc/passwd")
    return found


def build(size: int, rebuild: bool) -> tuple[Path, dict[str, Any]]:
    """The workload folder and its manifest (ground truth), reused unless missing, stale or --rebuild."""
    folder = DATA / f"peers-{size / 1e9:g}gb"
    manifest_path = DATA / f"peers-{size / 1e9:g}gb.manifest.json"
    if manifest_path.is_file() and not rebuild:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("layout") == LAYOUT_VERSION:
            return folder, manifest
    if folder.exists():
        subprocess.run(["rm", "-rf", "--", str(folder)], check=True)
    manifest_path.unlink(missing_ok=True)
    print(f"building {folder} ({size / 1e9:g} GB)...", file=sys.stderr)
    llama = folder / "llama-7b"
    shard_bytes = int(size * 0.55)
    build_shards(llama, shard_bytes, max(2, round(shard_bytes / 500e6)))
    _config_files(llama)
    _torch_checkpoint(folder / "checkpoints/checkpoint-500/training_state.pt", int(size * 0.12), legacy=False)
    _torch_checkpoint(folder / "checkpoints/legacy/pytorch_model.bin", int(size * 0.05), legacy=True)
    _gguf(folder / "gguf/model-f16.gguf", int(size * 0.18), SSTI.split("}}", 1)[1])
    _onnx(folder / "onnx/model.onnx", int(size * 0.08))
    _small_files(folder / "extras", 1000)
    hostile = _hostile(folder)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    manifest = {
        "layout": LAYOUT_VERSION,
        "size": sum((folder / f).stat().st_size for f in files),
        "files": len(files),
        "hostile": hostile,
    }
    manifest_path.write_text(json.dumps(manifest, indent=2))
    return folder, manifest


# --- tools ----------------------------------------------------------------------------------------


@dataclass
class Verdicts:
    """What one tool said about the folder, file by file (paths relative to the folder)."""

    flagged: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)
    scanned: int | None = None  # files the tool says it scanned, when it says
    notes: list[str] = field(default_factory=list)


def _rel(path: str, folder: Path) -> str:
    """A tool's path (absolute, relative, or with an archive member after ':' or '/') -> the folder's file."""
    for prefix in (str(folder) + "/", str(folder.resolve()) + "/"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    path = path.split(":", 1)[0]
    while path and not (folder / path).is_file() and "/" in path:
        path = path.rsplit("/", 1)[0]  # a member inside an archive: charge the archive
    return path


def _naming(target: str, folder: Path) -> str | None:
    """The small model file in the folder whose bytes name `target` (an external-data path, say)."""
    if not target:
        return None
    for path in sorted(folder.rglob("*.onnx")):
        if path.stat().st_size < 1 << 24 and target.encode() in path.read_bytes():
            return str(path.relative_to(folder))
    return None


def parse_wscan(out: Path, err: str, folder: Path) -> Verdicts:
    """Flagged: worst finding at high or critical, what fails the default --fail-on."""
    report = json.loads(out.read_text())
    v = Verdicts(scanned=report["summary"]["files"]["scanned"])
    for entry in report["files"]:
        rel = _rel(entry["path"], folder)
        if entry["worst"] in FAIL_SEVERITIES:
            v.flagged.add(rel)
        if entry["status"] == "failed":
            v.errors.add(rel)
    reasons = Counter(f"{Path(e['path']).suffix} ({e['reason']})" for e in report["files"] if e["status"] == "skipped")
    v.notes.append(f"skipped, by suffix and reason: {dict(sorted(reasons.items()))}")
    return v


def parse_picklescan(out: Path, err: str, folder: Path) -> Verdicts:
    """picklescan has no JSON mode: its per-file lines and summary are parsed from the text."""
    v = Verdicts()
    for line in (out.read_text() + "\n" + err).splitlines():
        if line.endswith("FOUND") and ": dangerous import" in line:
            v.flagged.add(_rel(line.split(": dangerous import", 1)[0], folder))
        elif line.startswith("Scanned files:"):
            v.scanned = int(line.split(":")[1])
        elif line.startswith("ERROR: parsing pickle in "):
            v.errors.add(_rel(line[len("ERROR: parsing pickle in ") :].split(": ", 1)[0], folder))
    return v


def parse_modelscan(out: Path, err: str, folder: Path) -> Verdicts:
    """Flagged: any issue; what it skipped as unsupported is kept, since that is where its misses come from."""
    report = json.loads(out.read_text())
    summary = report.get("summary", {})
    v = Verdicts(scanned=summary.get("scanned", {}).get("total_scanned"))
    for issue in report.get("issues", []):
        v.flagged.add(_rel(issue["source"], folder))
    for error in report.get("errors", []):
        v.errors.add(_rel(str(error.get("source", "?")), folder))
    whole = {f["source"] for f in summary.get("skipped", {}).get("skipped_files", []) if ":" not in f["source"]}
    skipped = Counter(Path(source).suffix for source in whole)  # archive members skipped are not counted
    v.notes.append(f"files not scanned (SCAN_NOT_SUPPORTED), by suffix: {dict(sorted(skipped.items()))}")
    return v


def parse_modelaudit(out: Path, err: str, folder: Path) -> Verdicts:
    """Flagged: an issue at warning or critical, the severities that make modelaudit exit 1."""
    report = json.loads(out.read_text())
    v = Verdicts(scanned=report.get("files_scanned"))
    for issue in report.get("issues", []):
        if str(issue.get("severity", "")).lower() not in {"critical", "warning"}:
            continue
        rel = _rel(re.sub(r" \(pos \d+\)$", "", str(issue.get("location") or "")), folder)
        if rel.startswith("/") or not (folder / rel).is_file():
            rel = _naming(str((issue.get("details") or {}).get("file", "")), folder) or rel
            note = f"issue at {issue.get('location')!r} charged to {rel}"
            v.notes += [note] if note not in v.notes else []
        v.flagged.add(rel)
    for asset in report.get("assets", []):
        if asset.get("error"):
            v.errors.add(_rel(str(asset.get("path", "?")), folder))
    return v


FICKLING_DRIVER = r"""
import json, sys, zipfile
from pathlib import Path
import fickling
from fickling.analysis import Severity
root, out = Path(sys.argv[1]), {}
for path in sorted(p for p in root.rglob("*") if p.is_file()):
    rel = str(path.relative_to(root))
    with open(path, "rb") as handle:
        head = handle.read(1)
    if zipfile.is_zipfile(path):
        results = list(fickling.scan_zip_archive(str(path), graceful=True).values())
    elif head == b"\x80":
        results = [fickling.scan_file(str(path), graceful=True)]
    else:
        continue
    out[rel] = {"severity": max((r.severity for r in results), default=Severity.LIKELY_SAFE).name,
                "safe": all(r.is_safe for r in results), "errors": sum(len(r.errors) for r in results)}
json.dump(out, open(sys.argv[2], "w"), indent=1)
sys.exit(0 if all(entry["safe"] for entry in out.values()) else 1)  # as --check-safety exits
"""


def parse_fickling(out: Path, err: str, folder: Path) -> Verdicts:
    """Flagged: not is_safe. Only the files the driver gave it count as scanned."""
    report = json.loads(out.read_text())
    v = Verdicts(scanned=len(report))
    v.notes.append("pickle streams and zip members only (files starting 0x80, or zips)")
    for rel, entry in report.items():
        if not entry["safe"]:
            v.flagged.add(rel)
        if entry["errors"]:
            v.errors.add(rel)
    return v


@dataclass
class Tool:
    """How to run one scanner on a folder, and how to read what it printed."""

    name: str
    argv: Callable[[Path, Path], list[str]]
    parse: Callable[[Path, str, Path], Verdicts]
    version: Callable[[], str]


def _venv_version(tool: str) -> str:
    """The version installed in the tool's own virtualenv, not whatever is beside wscan."""
    code = f"import importlib.metadata as m; print(m.version({tool!r}))"
    return subprocess.run([str(VENVS / tool / "bin/python"), "-c", code], capture_output=True, text=True).stdout.strip()


def _wscan_version() -> str:
    """The wscan that runs: the one installed in this interpreter."""
    import importlib.metadata

    return importlib.metadata.version("wscan")


TOOLS = [
    Tool(
        "wscan",
        lambda f, o: [sys.executable, "-m", "wscan", "scan", "--format", "json", "-o", str(o), str(f)],
        parse_wscan,
        _wscan_version,
    ),
    Tool(
        "picklescan",
        lambda f, o: [str(VENVS / "picklescan/bin/picklescan"), "-p", str(f)],
        parse_picklescan,
        lambda: _venv_version("picklescan"),
    ),
    Tool(
        "modelscan",
        lambda f, o: [
            str(VENVS / "modelscan/bin/modelscan"),
            "scan",
            "-p",
            str(f),
            "-r",
            "json",
            "-o",
            str(o),
            "--show-skipped",
        ],
        parse_modelscan,
        lambda: _venv_version("modelscan"),
    ),
    Tool(
        "modelaudit",
        lambda f, o: [
            str(VENVS / "modelaudit/bin/modelaudit"),
            "scan",
            "--format",
            "json",
            "--output",
            str(o),
            "--no-cache",
            str(f),
        ],
        parse_modelaudit,
        lambda: _venv_version("modelaudit"),
    ),
    Tool(
        "fickling",
        lambda f, o: [str(VENVS / "fickling/bin/python"), "-c", FICKLING_DRIVER, str(f), str(o)],
        parse_fickling,
        lambda: _venv_version("fickling"),
    ),
]


LAUNCHER = r"""
import json, os, subprocess, sys, threading, time
sys.path.insert(0, sys.argv[2])
from measure import rchar
spec = json.loads(sys.argv[1])
with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
    before, started = rchar(), time.monotonic()
    child = subprocess.Popen(spec["argv"], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    timer = threading.Timer(spec["timeout"], child.kill)
    timer.start()
    _, status, ru = os.wait4(child.pid, 0)
    wall, read = time.monotonic() - started, rchar() - before
    timer.cancel()
print(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
                  "peak_mib": round(ru.ru_maxrss / 1024, 1), "bytes_read": read,
                  "exit": os.waitstatus_to_exitcode(status)}))
"""


def measure(argv: list[str], stdout: Path, stderr: Path) -> dict[str, Any]:
    """Run argv to completion: wall, CPU and peak RSS of it and its descendants, and the bytes they read.

    A small stdlib-only launcher runs the tool: a child forked from this process (which has imported
    torch to build the workload) would inherit its peak RSS, as ru_maxrss keeps the pre-exec high-water mark.
    """
    env = dict(os.environ, PROMPTFOO_DISABLE_TELEMETRY="1", NO_ANALYTICS="1", TERM="dumb", NO_COLOR="1")
    spec = {"argv": argv, "stdout": str(stdout), "stderr": str(stderr), "timeout": TIMEOUT}
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", LAUNCHER, json.dumps(spec), str(HERE)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_tool(tool: Tool, folder: Path, manifest: dict[str, Any], outdir: Path) -> dict[str, Any]:
    """One tool, one run: measurements, then verdicts scored against the manifest."""
    out, log = outdir / f"{tool.name}.out", outdir / f"{tool.name}.err"
    out.unlink(missing_ok=True)
    stdout = out if tool.name == "picklescan" else outdir / f"{tool.name}.stdout"
    print(f"running {tool.name}...", file=sys.stderr, flush=True)
    row: dict[str, Any] = {"tool": tool.name, "version": tool.version()}
    row.update(measure(tool.argv(folder, out), stdout, log))
    row["runs"] = [{k: row[k] for k in ("wall_s", "cpu_s", "peak_mib")}]
    err = log.read_text(errors="replace")
    try:
        v = tool.parse(out, err, folder)
    except (OSError, ValueError, KeyError) as exc:
        v = Verdicts(notes=[f"no parsable output ({type(exc).__name__}: {exc}); stderr: {err[-300:]!r}"])
    hostile = set(manifest["hostile"])
    row.update(
        {
            "files_scanned": v.scanned,
            "hostile_caught": sorted(hostile & v.flagged),
            "hostile_missed": sorted(hostile - v.flagged),
            "hostile_total": len(hostile),
            "benign_flagged": sorted(v.flagged - hostile),
            "benign_total": manifest["files"] - len(hostile),
            "errors": sorted(v.errors),
            "notes": v.notes,
        }
    )
    return row


def run_rounds(
    tools: list[Tool], folder: Path, manifest: dict[str, Any], outdir: Path, repeat: int
) -> list[dict[str, Any]]:
    """Every tool `repeat` times, round by round, so a slow spell of a shared machine hits all tools alike.
    Each row reports the median wall, CPU and peak memory of its runs (all kept under "runs"); verdicts and
    bytes read come from the last run (they do not change between runs)."""
    rows: dict[str, dict[str, Any]] = {}
    for _ in range(max(1, repeat)):
        for tool in tools:
            row = run_tool(tool, folder, manifest, outdir)
            runs = [*rows[tool.name]["runs"], *row["runs"]] if tool.name in rows else row["runs"]
            row["runs"] = runs
            for key in ("wall_s", "cpu_s", "peak_mib"):
                row[key] = statistics.median(run[key] for run in runs)
            rows[tool.name] = row
    return [rows[tool.name] for tool in tools]


def compile_wscan() -> None:
    """Byte-compile the wscan under test, as pip does for every peer when it installs them. An editable install
    with PYTHONDONTWRITEBYTECODE set (as on the development machine) would otherwise compile wscan's sources
    on every run, about a tenth of a second that no user pays."""
    import wscan

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(wscan.__file__).parent)], check=True)


BIG_FILES = [
    "llama-7b/model-00001-of-*.safetensors",
    "checkpoints/checkpoint-500/training_state.pt",
    "checkpoints/legacy/pytorch_model.bin",
    "gguf/model-f16.gguf",
    "onnx/model.onnx",
]


def scale(small: Path, large: Path, outdir: Path) -> list[dict[str, Any]]:
    """wscan alone on each large file of both workloads: peak RSS should not follow the file's size."""
    entries = []
    for pattern in BIG_FILES:
        entry: dict[str, Any] = {"what": pattern}
        for key, folder in (("small", small), ("large", large)):
            path = sorted(folder.glob(pattern))[0]
            argv = [sys.executable, "-m", "wscan", "scan", "--format", "json", "-o", os.devnull, str(path)]
            m = measure(argv, outdir / "scale.stdout", outdir / "scale.stderr")
            entry.update({f"{key}_bytes": path.stat().st_size, f"{key}_peak_mib": m["peak_mib"]})
            entry[f"{key}_read"] = m["bytes_read"]
        entries.append(entry)
    return entries


def warm(folder: Path) -> None:
    """Read every byte once, so each tool finds the folder in the page cache (in a child: not our rchar)."""
    subprocess.run(["sh", "-c", 'find "$1" -type f -exec cat {} + > /dev/null', "-", str(folder)], check=True)


def table(rows: list[dict[str, Any]]) -> str:
    """The markdown table of the README: one row per tool."""
    head = "| tool | version | wall s | CPU s | peak MiB | bytes read | hostile caught | benign flagged | errors "
    lines = [head + "| files scanned | exit |", "|---|---|" + "---:|" * 9]
    for r in rows:
        scanned = "?" if r["files_scanned"] is None else r["files_scanned"]
        lines.append(
            f"| {r['tool']} | {r['version']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_mib']:.0f} "
            f"| {r['bytes_read']:,} | {len(r['hostile_caught'])}/{r['hostile_total']} "
            f"| {len(r['benign_flagged'])}/{r['benign_total']} | {len(r['errors'])} | {scanned} | {r['exit']} |"
        )
    return "\n".join(lines)


# --- setup and main -------------------------------------------------------------------------------


def setup(tools: list[str]) -> None:
    """A virtualenv per peer under VENVS, torch first and alone, then the pinned peer; torch checked after."""
    for tool in tools:
        if tool not in PEERS:
            continue
        venv = VENVS / tool
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        for group in PEERS[tool]:
            subprocess.run([str(venv / "bin/pip"), "install", "-q", *group], check=True)
        if any("torch==" in pkg for group in PEERS[tool] for pkg in group):
            code = "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"
            subprocess.run([str(venv / "bin/python"), "-c", code], check=True)
        print(f"{tool}: {_venv_version(tool)}", file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size-gb", type=float, default=3.5, help="workload size (default 3.5)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the workload even if present")
    parser.add_argument("--setup", action="store_true", help="create the peer virtualenvs and exit")
    parser.add_argument("--tools", default=",".join(t.name for t in TOOLS), help="comma-separated subset")
    parser.add_argument(
        "--no-scaling", action="store_true", help="skip wscan's runs on the workload at a quarter of the size"
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every tool; medians are reported (3)")
    args = parser.parse_args(argv)
    names = args.tools.split(",")
    if args.setup:
        setup(names)
        return 0
    tools = [t for t in TOOLS if t.name in names]
    folder, manifest = build(int(args.size_gb * 1e9), args.rebuild)
    outdir = DATA / "peers-out"
    outdir.mkdir(parents=True, exist_ok=True)
    warm(folder)
    compile_wscan()
    rows = run_rounds(tools, folder, manifest, outdir, args.repeat)
    scaling: list[dict[str, Any]] = []
    if not args.no_scaling and any(t.name == "wscan" for t in tools):
        small, small_manifest = build(int(args.size_gb / 4 * 1e9), args.rebuild)
        warm(small)
        scaling = scale(small, folder, outdir)
        whole = run_tool(TOOLS[0], small, small_manifest, outdir)
        full = next(r for r in rows if r["tool"] == "wscan")
        scaling.append({"what": "whole folder", "small_bytes": small_manifest["size"], "large_bytes": manifest["size"]})
        for key, row in (("small", whole), ("large", full)):
            scaling[-1].update({f"{key}_peak_mib": row["peak_mib"], f"{key}_read": row["bytes_read"]})

    print(
        f"\nworkload: {folder} ({manifest['size'] / 1e9:.2f} GB, {manifest['files']} files, "
        f"{len(manifest['hostile'])} hostile); page cache warm; {os.cpu_count()} CPUs\n"
    )
    print(table(rows))
    for r in rows:
        if r["hostile_missed"] or r["benign_flagged"] or r["errors"] or r["notes"]:
            print(
                f"\n{r['tool']}: missed {r['hostile_missed']}; benign flagged {r['benign_flagged'][:8]}"
                f"{'...' if len(r['benign_flagged']) > 8 else ''}; errors {r['errors'][:8]}; {'; '.join(r['notes'])}"
            )
    if scaling:
        print("\nwscan peak memory, same files at two sizes:\n")
        print("| file | size | peak MiB | bytes read | size | peak MiB | bytes read |\n|---|" + "---:|" * 6)
        for e in scaling:
            print(
                f"| {e['what']} | {e['small_bytes'] / 1e6:,.0f} MB | {e['small_peak_mib']:.0f} | {e['small_read']:,} "
                f"| {e['large_bytes'] / 1e6:,.0f} MB | {e['large_peak_mib']:.0f} | {e['large_read']:,} |"
            )
    RESULTS.mkdir(exist_ok=True)
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "peers_installed": PEERS,
        "flagged_means": FLAGGED_MEANS,
        "workload": {"path": str(folder), **manifest},
        "tools": rows,
        "wscan_scaling": scaling,
    }
    path = RESULTS / f"peers-{datetime.date.today().isoformat()}.json"
    path.write_text(json.dumps(result, indent=1, default=list) + "\n")
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
