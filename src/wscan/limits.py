"""Budgets every parser runs under, so hostile input ends in a finding instead of a hang or a crash."""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True, slots=True)
class Limits:
    """User-settable bounds; the report states the values it ran with."""

    max_depth: int = 6                       # containers inside containers
    max_members: int = 100_000               # entries per archive
    max_decompressed_bytes: int = 8 * GIB    # per top-level file, all layers together
    max_compression_ratio: int = 200         # per member, once it is past max_ratio_floor
    ratio_floor_bytes: int = 16 * MIB        # small members may compress as well as they like
    max_member_bytes: int = 2 * GIB          # a single member that must be materialised to be scanned
    max_pickle_bytes: int = 512 * MIB        # one pickle stream's opcodes and their arguments
    max_pickle_opcodes: int = 20_000_000
    max_memo_entries: int = 4_000_000        # distinct objects of a data pickle: 1.2 M in real word lists
    max_stack_depth: int = 1_000_000
    max_header_bytes: int = 100 * MIB        # npy / safetensors style headers
    max_json_bytes: int = 64 * MIB           # config, tokenizer and template files (tokenizer.json is the big one)
    max_bytes_read: int = 16 * GIB           # per top-level file, every layer and re-read together
    max_seconds_per_file: float = 300.0      # checked as parsers go; a worker past it (+ grace) is killed
    # Observations of one file, each judged as it comes (about 30 us): a 4 MB pickle of 200,000 distinct imports
    # is judged in 6 s. Real files make under 100; an archive one per member (max-members).
    max_observations: int = 200_000
    # What a worker may allocate past what it holds when it starts (Linux: RLIMIT_DATA). The backstop for parsers
    # no other limit bounds closely enough: past it an allocation fails, and the file gets a limit finding instead
    # of the kernel's OOM killer ending the scan, or a CI runner's other processes. Never more than the worker's
    # share of the machine (`within_machine`).
    max_memory_bytes: int = 4 * GIB

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> Limits:
        """Build from config keys written in kebab case (max-depth: 4)."""
        known = {f.name for f in fields(cls)}
        defaults = cls()
        values: dict[str, Any] = {}
        for key, value in data.items():
            name = key.replace("-", "_")
            if name not in known:
                raise ValueError(f"unknown limit {key!r}")
            default = getattr(defaults, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{key} must be a positive number, not {value!r}")
            if not isinstance(default, float) and value != int(value):
                raise ValueError(f"{key} must be a whole number, not {value!r}")
            values[name] = float(value) if isinstance(default, float) else int(value)
        return replace(defaults, **values)

    def as_dict(self) -> dict[str, int | float]:
        return {f.name.replace("_", "-"): getattr(self, f.name) for f in fields(self)}

    def within_machine(self, workers: int, machine: int | None) -> Limits:
        """These limits with max-memory-bytes cut to one worker's share of `machine` bytes (MACHINE_SHARE of them,
        split evenly), so that every worker at its cap at once still fits: two at 4 GiB on a 7 GB CI runner would
        have the kernel kill one, or the runner's own processes. Unknown memory (None) cuts nothing."""
        if machine is None or workers < 1:
            return self
        share = max(MIB, int(machine * MACHINE_SHARE) // workers)
        return self if share >= self.max_memory_bytes else replace(self, max_memory_bytes=share)


MACHINE_SHARE = 0.75  # of the machine's memory, for the workers together; the rest is the parent's and the system's
_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


def machine_memory() -> int | None:
    """The memory this process's workers may use between them: the physical memory, or less where the memory cgroup
    of this process or one of its parents (a container, a CI job, a systemd slice) says so. None where unknown."""
    try:
        total: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = None
    for limit in _cgroup_limits():
        total = limit if total is None else min(total, limit)
    return total


def _cgroup_limits(listing: Path = Path("/proc/self/cgroup"), mount: Path = Path("/sys/fs/cgroup")) -> list[int]:
    """Memory limits of this process's cgroups and their parents, v2 (memory.max) and v1 (memory.limit_in_bytes)."""
    try:
        lines = listing.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found: list[int] = []
    for line in lines:
        entry = line.split(":", 2)  # hierarchy id : controllers : path
        if len(entry) != 3:
            continue
        _, controllers, path = entry
        if controllers == "":  # v2: one hierarchy
            root, name = mount, "memory.max"
        elif "memory" in controllers.split(","):
            root, name = mount / "memory", "memory.limit_in_bytes"
        else:
            continue
        parts = [part for part in path.split("/") if part and part != ".."]
        for depth in range(len(parts) + 1):  # the root (a container's own cgroup, mounted there) and each parent
            try:
                text = (root.joinpath(*parts[:depth]) / name).read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError):
                continue
            if text.isdigit() and 0 < int(text) < _UNLIMITED:
                found.append(int(text))
    return found


class BudgetExceeded(Exception):
    """Raised inside a parser when a limit is hit; the engine turns it into a scan.limit observation."""

    def __init__(self, limit: str, detail: str) -> None:
        super().__init__(f"{limit}: {detail}")
        self.limit = limit
        self.detail = detail


class Budget:
    """Running totals for one top-level file, shared by every nested layer inside it."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.decompressed = 0
        self.read = 0
        self.deadline = time.monotonic() + limits.max_seconds_per_file

    def charge_decompressed(self, nbytes: int) -> None:
        self.decompressed += nbytes
        if self.decompressed > self.limits.max_decompressed_bytes:
            raise BudgetExceeded(
                "max-decompressed-bytes",
                f"more than {self.limits.max_decompressed_bytes} bytes decompressed from one file",
            )

    def charge_read(self, nbytes: int) -> None:
        self.read += nbytes
        if self.read > self.limits.max_bytes_read:
            raise BudgetExceeded(
                "max-bytes-read", f"more than {self.limits.max_bytes_read} bytes read from one file"
            )

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise BudgetExceeded(
                "max-seconds-per-file", f"scan took longer than {self.limits.max_seconds_per_file} s"
            )


class _CountingFile(io.FileIO):
    """A file whose every read is charged to a budget (the buffered reader above it reads through here)."""

    def __init__(self, path: Path, budget: Budget) -> None:
        super().__init__(path, "rb")
        self._budget = budget

    def readinto(self, buffer: Any) -> int | None:
        count = super().readinto(buffer)
        if count:
            self._budget.charge_read(count)
        return count

    def readall(self) -> bytes:
        data = super().readall()
        self._budget.charge_read(len(data))
        return data


def open_counted(path: Path, budget: Budget) -> io.BufferedReader:
    """Open a top-level file for reading with `max-bytes-read` enforced on everything read from it."""
    return io.BufferedReader(_CountingFile(path, budget))
