"""Third-party scanners register through the `wscan.scanners` entry-point group; without one installed, a
scan never pays for importlib.metadata."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wscan.config import Config
from wscan.discover import FileEntry, discover
from wscan.engine import Engine
from wscan.model import Observation
from wscan.rules import RuleSet
from wscan.scanners import PLUGIN_GROUP, all_scanners, builtin_scanners
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

PLUGIN = '''
from wscan.scanners.base import Artifact, Head, ScanContext

class DemoScanner:
    name = "demo"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith(b"DEMO")

    def scan(self, artifact: Artifact, ctx: ScanContext):
        yield artifact.observe("fact.demo", 0, seen=True)
'''


def install_plugin(site: Path, group: str = PLUGIN_GROUP) -> None:
    """A distribution as pip leaves it: a module and a dist-info folder with entry_points.txt."""
    (site / "demo_wscan_plugin.py").write_text(PLUGIN)
    info = site / "demo_wscan_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo-wscan-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\ndemo = demo_wscan_plugin:DemoScanner\n")


def test_an_installed_plugin_scanner_runs_after_the_builtin_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [scanner.name for scanner in all_scanners()]
    assert names == [scanner.name for scanner in builtin_scanners()] + ["demo"]
    sample = tmp_path / "x.demo"
    sample.write_bytes(b"DEMO and some bytes")
    engine = Engine(Config())
    (entry,) = [item for item in discover([sample]) if isinstance(item, FileEntry)]
    found, formats = engine.scan_file(entry)
    assert formats == ["demo"]
    assert [(o.kind, dict(o.attrs)) for o in found] == [("fact.demo", {"seen": True})]


def test_a_distribution_with_other_entry_points_adds_no_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_plugin(tmp_path, group="console_scripts")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [s.name for s in all_scanners()] == [s.name for s in builtin_scanners()]


def test_without_plugins_a_scan_never_imports_importlib_metadata(tmp_path: Path) -> None:
    """importlib.metadata costs 50-100 ms to import and ask: a third of start-up."""
    sample = tmp_path / "weights.bin"
    sample.write_bytes(b"\x80\x04K\x01.")
    code = (
        "import sys; from wscan.cli import main; code = main(['scan', '--no-progress', sys.argv[1]]);"
        "print('importlib.metadata' in sys.modules, file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert run.stderr.strip().splitlines()[-1] == "False"


class _ListAttrs:
    """A plugin scanner that breaks the str/int/bool contract for attributes."""

    name = "list-attrs"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith(b"LIST")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        attrs: dict[str, Any] = {"callable": "posix.system", "module": "posix", "name": "system", "args": [1, 2]}
        yield artifact.observe("pickle.import", 0, **attrs)
        yield artifact.observe("pickle.import", 0, **attrs)


@pytest.mark.parametrize("jobs", [0, 1])
def test_a_plugin_attribute_that_is_a_list_is_still_judged(tmp_path: Path, jobs: int) -> None:
    """Findings are told apart by their attributes as a set key; a list there must not end the scan."""
    sample = tmp_path / "x.list"
    sample.write_bytes(b"LIST and some bytes")
    report = Engine(Config(jobs=jobs), scanners=[*builtin_scanners(), _ListAttrs()]).scan([sample])
    assert [(f.rule_id, f.evidence["args"]) for f in report.findings] == [("WS-PKL-001", "[1, 2]")]


class _Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text")


class _OddAttrs:
    """A plugin scanner whose second attribute cannot be read as text (a rule's set test needs it)."""

    name = "odd-attrs"

    def accepts(self, head: Head) -> bool:
        return head.head.startswith(b"ODD")

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        yield artifact.observe("pickle.import", 0, callable="posix.system", module="posix", name="system")
        odd: Any = _Unprintable()
        yield artifact.observe("pickle.import", 1, callable=odd, module="x", name="y")


@pytest.mark.parametrize("jobs", [0, 1])
def test_an_attribute_that_cannot_be_read_as_text_is_judged_by_its_type(tmp_path: Path, jobs: int) -> None:
    """Judging must not fail on a plugin's attribute: an exception there would drop the file's other findings."""
    (tmp_path / "x.odd").write_bytes(b"ODD and some bytes")
    report = Engine(Config(jobs=jobs), scanners=[*builtin_scanners(), _OddAttrs()]).scan([tmp_path])
    assert [(f.rule_id, f.evidence["callable"]) for f in report.findings] == [
        ("WS-PKL-001", "posix.system"), ("WS-PKL-003", "<_Unprintable>")]
    assert [r.status for r in report.files] == ["scanned"]


@pytest.mark.parametrize("jobs", [0, 1])
def test_a_failure_while_judging_fails_the_file_not_the_scan(
    tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last resort, for a bug in wscan's own judging: that file gets WS-FILE-001, the others are judged."""
    (tmp_path / "bad.pkl").write_bytes(b"cposix\nsystem\n(S'id'\ntR.")
    (tmp_path / "good.pkl").write_bytes(b"cposix\nsystem\n(S'id'\ntR.")
    judge = RuleSet.judge_listing

    def failing(self: RuleSet, observations: Iterable[Observation], listed: int | None) -> Any:
        observations = list(observations)
        if any(o.kind == "pickle.import" and o.location.path.endswith("bad.pkl") for o in observations):
            raise RuntimeError("a bug")
        return judge(self, observations, listed)

    monkeypatch.setattr(RuleSet, "judge_listing", failing)
    report = Engine(Config(jobs=jobs)).scan([tmp_path])
    assert {(Path(f.location.path).name, f.rule_id) for f in report.findings} == {
        ("bad.pkl", "WS-FILE-001"), ("good.pkl", "WS-PKL-001")}
    [failed] = [f for f in report.findings if f.rule_id == "WS-FILE-001"]
    assert "judging failed: RuntimeError: a bug" in failed.message
