"""How fast wscan could be on the peers' workload if everything but its scanning were free.

Why: `peers.py` shows picklescan ahead of wscan. This says whether start-up or the scanning itself is the
gap, so the next change aims at the right thing. It measures, in interleaved rounds on the workload
`peers.py` built (each process timed by peers.measure: wall, CPU with children):

- picklescan's whole run, and wscan's whole run;
- wscan on an empty folder: interpreter, imports, rule packs, an empty report;
- the scanning alone: one process imports wscan, then scans the folder twice in itself and reports each
  pass's CPU. The first pass loads each library its checks use (onnx's protobuf classes and checker, Jinja,
  gguf's tables) once, as a scan must; the second finds them loaded. Half the first pass is the least wall
  time two cores can take to do a scan's work, with the interpreter, wscan's imports, rule packs, workers
  and the report all free.

Run: python bench/peers.py --setup && python bench/peers.py   (once: venvs and workload)
     python bench/floor.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from peers import DATA, RESULTS, VENVS, compile_wscan, measure, warm

# The scanning alone, in one process. Files are scanned in it (jobs 0), as a scan worker would: onnx is loaded
# the way a worker loads it (its protobuf classes and checker, not its NumPy helpers).
SCAN_TWICE = r"""
import gc, json, sys, time
from dataclasses import replace
from pathlib import Path
import wscan.parallel
from wscan.config import Config
from wscan.engine import Engine

gc.disable()
wscan.parallel.IN_WORKER = True
engine = Engine(replace(Config.load(None), jobs=0))
passes = []
for _ in range(2):
    start = time.process_time()
    report = engine.scan([Path(sys.argv[1])])
    passes.append(time.process_time() - start)
print(json.dumps({"first_cpu_s": round(passes[0], 3), "second_cpu_s": round(passes[1], 3),
                  "files": len(report.files)}))
"""


def wscan_argv(folder: Path) -> list[str]:
    return [sys.executable, "-m", "wscan", "scan", "--format", "json", "-o", os.devnull, str(folder)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds; medians are reported (5)")
    args = parser.parse_args(argv)
    folder = DATA / "peers-3.5gb"
    picklescan = VENVS / "picklescan/bin/picklescan"
    if not folder.is_dir() or not picklescan.exists():
        print("run `python bench/peers.py --setup && python bench/peers.py` first", file=sys.stderr)
        return 2
    compile_wscan()
    warm(folder)
    out = DATA / "peers-out"
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {"picklescan": [], "wscan": [], "wscan, empty folder": [], "scanning": []}
    with tempfile.TemporaryDirectory() as empty:
        commands = {
            "picklescan": [str(picklescan), "-p", str(folder)],
            "wscan": wscan_argv(folder),
            "wscan, empty folder": wscan_argv(Path(empty)),
        }
        for _ in range(max(1, args.repeat)):
            for name, command in commands.items():
                runs[name].append(measure(command, out / "floor.stdout", out / "floor.stderr"))
            done = subprocess.run(
                [sys.executable, "-c", SCAN_TWICE, str(folder)], capture_output=True, text=True, check=True
            )
            runs["scanning"].append(json.loads(done.stdout))
    rows = {name: {key: statistics.median(r[key] for r in rs) for key in ("wall_s", "cpu_s")}
            for name, rs in runs.items() if name != "scanning"}
    scanning = {key: statistics.median(r[key] for r in runs["scanning"]) for key in ("first_cpu_s", "second_cpu_s")}
    floor = scanning["first_cpu_s"] / 2
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "workload": str(folder),
        "cpus": os.cpu_count(),
        "medians": rows,
        "scanning": scanning,
        "scanning_floor_wall_s": round(floor, 3),
        "runs": runs,
    }
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d-%H%M")
    path = RESULTS / f"floor-{stamp}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print("| what | wall s | CPU s |\n|---|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['wall_s']:.3f} | {row['cpu_s']:.3f} |")
    print(f"| the scanning alone, in one process, loading each library once | | {scanning['first_cpu_s']:.3f} |")
    print(f"| the same again, libraries loaded | | {scanning['second_cpu_s']:.3f} |")
    print(f"| the least wall time two cores take for the first (half its CPU) | {floor:.3f} | |")
    print(f"written: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
