"""Run the atheris fuzz targets one after the other, each for a fixed time; exit 1 if any of them crashed.

    python fuzz/run.py --seconds 300                 # every target, 5 minutes each
    python fuzz/run.py --seconds 4 --jobs 2          # the bounded CI run, two targets at a time
    python fuzz/run.py --seconds 60 --target pickle --target gguf

Seeds are rebuilt from corpus/ into fuzz/work/seeds/; inputs the fuzzer finds interesting accumulate in
fuzz/work/corpus/<target>/, crash and timeout reproducers in fuzz/work/crashes/<target>/, the libFuzzer
log in fuzz/work/logs/<target>.log, and a summary of the run in fuzz/work/results.json.
Targets run one at a time, or `--jobs` of them side by side (each is its own process: on two cores the CI run takes
half the time, most of each short run being start-up); libFuzzer's own -jobs/-workers are not used.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
TARGETS_DIR = FUZZ_DIR / "targets"
WORK = FUZZ_DIR / "work"
sys.path.insert(0, str(FUZZ_DIR))

from seeds import MAX_SEED_BYTES, SOURCES, build  # noqa: E402

_RUNS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")
_DONE = re.compile(r"Done (\d+) runs in (\d+) second")
_ARTIFACT = re.compile(r"(?:Test unit|input that raised) written to (\S+)")


@dataclass
class Result:
    """One target's run."""

    target: str
    seconds: float
    executions: int
    exit_code: int
    crashed: bool
    artifacts: list[str]
    log: str


def targets() -> list[str]:
    """Every target name: fuzz/targets/fuzz_<name>.py."""
    return sorted(p.stem.removeprefix("fuzz_") for p in TARGETS_DIR.glob("fuzz_*.py"))


def run_target(
    name: str, work: Path, seeds: Path, seconds: int, timeout: int, rss_limit_mb: int, max_len: int
) -> Result:
    """One target under libFuzzer for `seconds`; its log goes to work/logs/<name>.log."""
    corpus = work / "corpus" / name
    crashes = work / "crashes" / name
    logs = work / "logs"
    for folder in (corpus, crashes, logs):
        folder.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    scratch = Path(tempfile.mkdtemp(prefix=f"scratch-{name}-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    command = [
        sys.executable,
        str(TARGETS_DIR / f"fuzz_{name}.py"),
        str(corpus),
        str(seeds),
        f"-max_total_time={seconds}",
        f"-timeout={timeout}",
        f"-rss_limit_mb={rss_limit_mb}",
        f"-max_len={max_len}",
        f"-artifact_prefix={crashes}/",
        "-print_final_stats=1",
    ]
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        # Hard stop well past the budget: libFuzzer only checks max_total_time between inputs.
        try:
            code = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, timeout=seconds + timeout + 120, check=False,
                env={**os.environ, "WSCAN_FUZZ_CRASH_DIR": str(crashes), "WSCAN_FUZZ_SCRATCH": str(scratch)},
            ).returncode
        except subprocess.TimeoutExpired:
            code = -9
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - started
    text = log.read_text(encoding="utf-8", errors="replace")
    runs = [int(m) for m in _RUNS.findall(text)] or [int(m.group(1)) for m in _DONE.finditer(text)]
    artifacts = sorted(set(_ARTIFACT.findall(text)))
    return Result(name, round(elapsed, 1), max(runs, default=0), code, code != 0, artifacts, str(log))


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the chosen targets, print a table; 1 if any target failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=int, required=True, help="fuzzing time per target")
    parser.add_argument("--target", action="append", choices=targets(), help="run only this target (repeatable)")
    parser.add_argument("--timeout", type=int, default=30, help="seconds one input may take (libFuzzer -timeout)")
    parser.add_argument("--rss-limit-mb", type=int, default=2048, help="memory ceiling (libFuzzer -rss_limit_mb)")
    parser.add_argument("--max-len", type=int, default=MAX_SEED_BYTES, help="largest input libFuzzer generates")
    parser.add_argument("--work", type=Path, default=WORK, help="folder for seeds, corpora, crashes and logs")
    parser.add_argument("--jobs", type=int, default=1, help="targets run at once, each in its own process (1)")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("atheris") is None:
        print("fuzz/run.py: atheris is not installed in this Python: pip install atheris", file=sys.stderr)
        return 2
    chosen = args.target or targets()
    missing = [t for t in chosen if t not in SOURCES]
    if missing:
        print(f"fuzz/run.py: no seed source for {', '.join(missing)}", file=sys.stderr)
        return 2
    work: Path = args.work.resolve()
    seeds = build(work, chosen)
    results: list[Result] = []
    started = time.monotonic()

    def run(name: str) -> Result:
        return run_target(name, work, seeds[name], args.seconds, args.timeout, args.rss_limit_mb, args.max_len)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # threads only wait on the targets' processes
        for result in pool.map(run, chosen):  # reported in order, each as soon as it and those before it are done
            status = "CRASH" if result.crashed else "ok"
            print(f"{result.target:15} {status:5} {result.seconds:7.1f} s {result.executions:9} execs  {result.log}",
                  flush=True)
            for artifact in result.artifacts:
                print(f"{'':15} reproducer: {artifact}", flush=True)
            results.append(result)
    total = time.monotonic() - started
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds_per_target": args.seconds,
        "wall_seconds": round(total, 1),
        "results": [asdict(r) for r in results],
    }
    (work / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    crashed = [r.target for r in results if r.crashed]
    print(f"{len(results)} targets in {total:.0f} s; " + (f"FAILED: {', '.join(crashed)}" if crashed else "all clean"))
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
