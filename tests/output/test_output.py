"""Renderers against hand-built reports: exact text, schema-valid JSON, GitHub-ready SARIF."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers.github_sarif import check_github_requirements
from wscan.model import Finding, Location, Severity
from wscan.output import FORMATS, render, render_json, render_sarif, render_text, report_schema
from wscan.output.json import SCHEMA_URI, ordered_findings
from wscan.output.sarif import SECURITY_SEVERITY, to_sarif
from wscan.report import FileResult, Report, RuleInfo

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
ODD_PATH = "models/dir with space/ünï 模型.bin"
ODD_URI = "models/dir%20with%20space/%C3%BCn%C3%AF%20%E6%A8%A1%E5%9E%8B.bin"

RULES = {
    "WS-PKL-001": RuleInfo(
        "WS-PKL-001",
        "pickle-calls-code-execution",
        Severity.CRITICAL,
        "Pickle calls a code-execution gadget",
        "Loading this pickle calls a function that can run arbitrary commands.",
        "Do not load this file. Ask the publisher for safetensors weights.",
        cwe=("CWE-502",),
        tags=("deserialization",),
    ),
    "WS-PKL-002": RuleInfo(
        "WS-PKL-002",
        "pickle-unknown-import",
        Severity.HIGH,
        "Pickle imports a callable outside the allowlist",
        "Unknown imports can run code when __reduce__ output is loaded.",
        "Check the module; allow it in config only if you trust it.",
        cwe=("CWE-502",),
        tags=("deserialization",),
        precision="medium",
    ),
    "WS-ZIP-001": RuleInfo(
        "WS-ZIP-001",
        "archive-path-traversal",
        Severity.MEDIUM,
        "Archive member escapes the extraction folder",
        "A member name climbs out with '..'.",
        "Extract with a tool that rejects such names.",
        cwe=("CWE-22",),
    ),
    "WS-ST-001": RuleInfo(
        "WS-ST-001",
        "trailing-bytes",
        Severity.LOW,
        "Bytes after the last tensor",
        "Data after the payload can hide a second file.",
        "Re-export the weights.",
    ),
    "WS-GEN-001": RuleInfo(
        "WS-GEN-001",
        "pickle-protocol",
        Severity.INFO,
        "Pickle protocol",
        "Protocol in use.",
        "",
    ),
}


def make_findings() -> list[Finding]:
    return [
        Finding(
            "WS-GEN-001",
            Severity.INFO,
            "Pickle protocol 2",
            Location("models/evil.pkl"),
            {"truncated": False, "protocol": 2},
        ),
        Finding(
            "WS-ST-001",
            Severity.LOW,
            "3 bytes after the last tensor",
            Location("models/evil.pkl", None, 0),
            {"trailing_bytes": 3},
        ),
        Finding(
            "WS-ZIP-001",
            Severity.MEDIUM,
            "Member ../../etc/passwd escapes",
            Location(ODD_PATH, "../../etc/passwd"),
            {"name": "../../etc/passwd"},
        ),
        Finding(
            "WS-PKL-002",
            Severity.HIGH,
            "Unknown import mylib.Loader",
            Location(ODD_PATH, "a.tar!x.zip!data.pkl", 1234),
            {"module": "mylib", "name": "Loader"},
        ),
        Finding(
            "WS-PKL-002",
            Severity.HIGH,
            "Unknown import mylib.Loader",
            Location(ODD_PATH, "archive/data.pkl", 7),
            {"module": "mylib", "name": "Loader"},
        ),
        Finding(
            "WS-PKL-001",
            Severity.CRITICAL,
            "Loading runs os.system: it can execute arbitrary commands",
            Location("models/evil.pkl", None, 42),
            {"callable": "os.system", "opcode": "REDUCE"},
        ),
    ]


def make_report(findings: list[Finding] | None = None, duration: float = 1.23456) -> Report:
    return Report(
        tool_version="0.1.0",
        rules_digest="sha256:" + "ab" * 32,
        fail_on=Severity.HIGH,
        files=[
            FileResult("models/weights.bin", 130, (), "skipped", "Git LFS pointer"),
            FileResult("models/evil.pkl", 120, ("pickle",), "scanned", "", Severity.CRITICAL),
            FileResult(ODD_PATH, 4096, ("zip", "pickle"), "scanned", "", Severity.HIGH),
            FileResult("models/clean.safetensors", 64, ("safetensors",), "scanned"),
            FileResult("models/broken.zip", 10, (), "failed", "permission denied"),
        ],
        findings=make_findings() if findings is None else findings,
        rules=dict(RULES),
        limits={"max_depth": 6, "max_seconds_per_file": 300.0},
        duration_seconds=duration,
    )


def empty_report() -> Report:
    return Report(tool_version="0.1.0", rules_digest="", fail_on=Severity.MEDIUM)


def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def report_validator() -> jsonschema.Draft202012Validator:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def sarif_of(report: Report, srcroot: Path | None = None, *, github: bool = True, **caps: int) -> dict[str, Any]:
    """Render, then check as every SARIF in the suite is checked: official schema, and GitHub's rules."""
    log: dict[str, Any] = json.loads(render_sarif(report, srcroot, **caps))
    sarif_validator().validate(log)
    if github:
        assert check_github_requirements(log) == []
    return log


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Report paths are relative to the working directory; give every test its own."""
    monkeypatch.chdir(tmp_path)


# --- text -------------------------------------------------------------------------------------

EXPECTED_TEXT = f"""\
wscan 0.1.0: 5 files, 6 findings, fail on high

models/evil.pkl  (pickle)
  CRITICAL  WS-PKL-001  Loading runs os.system: it can execute arbitrary commands
            at models/evil.pkl@42
            help: Do not load this file. Ask the publisher for safetensors weights.
  LOW       WS-ST-001  3 bytes after the last tensor
            at models/evil.pkl@0
            help: Re-export the weights.
  INFO      WS-GEN-001  Pickle protocol 2
            at models/evil.pkl

{ODD_PATH}  (zip > pickle)
  HIGH      WS-PKL-002  Unknown import mylib.Loader
            at {ODD_PATH}!a.tar!x.zip!data.pkl@1234
            help: Check the module; allow it in config only if you trust it.
  HIGH      WS-PKL-002  Unknown import mylib.Loader
            at {ODD_PATH}!archive/data.pkl@7
            help: Check the module; allow it in config only if you trust it.
  MEDIUM    WS-ZIP-001  Member ../../etc/passwd escapes
            at {ODD_PATH}!../../etc/passwd
            help: Extract with a tool that rejects such names.

Not scanned:
  failed   models/broken.zip: permission denied
  skipped  models/weights.bin: Git LFS pointer

Files: 3 scanned, 1 skipped, 1 failed, 5 total
Findings: 1 critical, 2 high, 1 medium, 1 low, 1 info
Limits: max_depth 6, max_seconds_per_file 300
Verdict: FAIL (findings at or above high)
"""


def test_text_is_exact_and_plain_without_colour() -> None:
    text = render_text(make_report(), color=False)
    assert text == EXPECTED_TEXT
    assert "\x1b" not in text


def test_text_colour_uses_ansi_only_when_asked() -> None:
    text = render_text(make_report(), color=True)
    assert "\x1b[1;31mCRITICAL" in text
    assert "\x1b[0m" in text
    plain = render(make_report(), "text")
    assert "\x1b" not in plain


def test_text_empty_report_passes() -> None:
    text = render_text(empty_report())
    assert text.splitlines() == [
        "wscan 0.1.0: 0 files, 0 findings, fail on medium",
        "",
        "No findings.",
        "",
        "Files: 0 scanned, 0 skipped, 0 failed, 0 total",
        "Findings: 0 critical, 0 high, 0 medium, 0 low, 0 info",
        "Verdict: PASS (nothing at or above medium)",
    ]


def test_text_neutralises_terminal_controls_from_hostile_names() -> None:
    hostile = Finding(
        "WS-PKL-002", Severity.HIGH, "Unknown import \x1b[2Jevil\u202etxt.exe", Location("x.pkl", "a\nb"), {}
    )
    text = render_text(make_report([hostile]), color=False)
    assert "\x1b" not in text and "\u202e" not in text
    assert "Unknown import \\x1b[2Jevil\\u202etxt.exe" in text
    assert "at x.pkl!a\\x0ab" in text


# --- json -------------------------------------------------------------------------------------


def test_json_validates_and_has_documented_layout() -> None:
    doc = json.loads(render_json(make_report()))
    report_validator().validate(doc)
    assert list(doc) == ["schema", "schema_version", "tool", "settings", "summary", "models", "files", "findings"]
    assert doc["schema"] == SCHEMA_URI == report_schema()["$id"]
    assert doc["tool"] == {"name": "wscan", "version": "0.1.0", "rules_digest": "sha256:" + "ab" * 32}
    assert doc["settings"] == {"fail_on": "high", "limits": {"max_depth": 6, "max_seconds_per_file": 300.0}}
    assert doc["summary"] == {
        "files": {"scanned": 3, "skipped": 1, "failed": 1, "total": 5},
        "findings": {"critical": 1, "high": 2, "medium": 1, "low": 1, "info": 1},
        "verdict": "fail",
        "duration_seconds": 1.235,
    }
    assert [f["path"] for f in doc["files"]] == sorted(f.path for f in make_report().files)
    assert doc["files"][0] == {
        "path": "models/broken.zip",
        "size": 10,
        "formats": [],
        "status": "failed",
        "reason": "permission denied",
        "worst": None,
    }
    first = doc["findings"][0]
    assert list(first) == ["rule_id", "severity", "message", "location", "evidence"]
    assert first["location"] == {"path": "models/evil.pkl", "member": None, "offset": 42}
    assert list(doc["findings"][-1]["evidence"]) == ["protocol", "truncated"]


def test_json_round_trips_to_the_same_findings() -> None:
    report = make_report()
    text = render_json(report)
    doc = json.loads(text)
    rebuilt = [
        Finding(
            f["rule_id"],
            Severity.parse(f["severity"]),
            f["message"],
            Location(f["location"]["path"], f["location"]["member"], f["location"]["offset"]),
            f["evidence"],
        )
        for f in doc["findings"]
    ]
    assert rebuilt == ordered_findings(report.findings)
    assert [f.sort_key() for f in rebuilt] == sorted(f.sort_key() for f in rebuilt)
    files = [
        FileResult(
            f["path"],
            f["size"],
            tuple(f["formats"]),
            f["status"],
            f["reason"],
            Severity.parse(f["worst"]) if f["worst"] else None,
        )
        for f in doc["files"]
    ]
    assert files == sorted(report.files, key=lambda f: f.path)
    assert json.dumps(doc, indent=2) + "\n" == text


def test_json_does_not_depend_on_input_order() -> None:
    assert render_json(make_report(make_findings()[::-1])) == render_json(make_report())


def test_json_empty_report_validates() -> None:
    doc = json.loads(render(empty_report(), "json"))
    report_validator().validate(doc)
    assert doc["findings"] == [] and doc["files"] == [] and doc["summary"]["verdict"] == "pass"


def test_json_schema_is_closed() -> None:
    doc = json.loads(render_json(make_report()))
    validator = report_validator()
    extra = copy.deepcopy(doc)
    extra["findings"][0]["extra"] = 1
    bad_severity = copy.deepcopy(doc)
    bad_severity["findings"][0]["severity"] = "urgent"
    for broken in (extra, bad_severity):
        assert not validator.is_valid(broken)


# --- sarif ------------------------------------------------------------------------------------


def test_sarif_validates_against_official_schema_and_github_rules() -> None:
    validator = sarif_validator()
    for report in (make_report(), empty_report()):
        log = sarif_of(report)
        validator.validate(log)
        assert check_github_requirements(log) == []


def test_sarif_run_shape(tmp_path: Path) -> None:
    log = sarif_of(make_report())
    assert log["version"] == "2.1.0" and log["$schema"].startswith("https://")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"], driver["semanticVersion"]) == ("wscan", "0.1.0", "0.1.0")
    assert driver["informationUri"].startswith("https://")
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.as_uri() + "/"}}
    assert run["automationDetails"] == {"id": "wscan/"}
    assert run["columnKind"] == "unicodeCodePoints"
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is True
    assert [n["message"]["text"] for n in invocation["toolExecutionNotifications"]] == [
        "Could not scan models/broken.zip: permission denied"
    ]
    assert run["properties"] == {"models": [], "scanLimits": {"max_depth": 6, "max_seconds_per_file": 300.0}}


def test_sarif_rules_are_referenced_sorted_and_complete() -> None:
    rules = sarif_of(make_report())["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(RULES)
    by_id = {r["id"]: r for r in rules}
    critical = by_id["WS-PKL-001"]
    assert critical["name"] == "pickle-calls-code-execution"
    assert critical["shortDescription"]["text"] == "Pickle calls a code-execution gadget"
    assert critical["fullDescription"]["text"].startswith("Loading this pickle")
    assert critical["help"]["text"] == "Do not load this file. Ask the publisher for safetensors weights."
    assert "[CWE-502](https://cwe.mitre.org/data/definitions/502.html)" in critical["help"]["markdown"]
    assert critical["defaultConfiguration"] == {"level": "error"}
    assert critical["properties"] == {
        "security-severity": "9.5",
        "tags": ["security", "deserialization", "external/cwe/cwe-502"],
        "precision": "high",
    }
    assert "\\_\\_reduce\\_\\_" in by_id["WS-PKL-002"]["help"]["markdown"]
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in rules}
    assert levels == {
        "WS-GEN-001": "note",
        "WS-PKL-001": "error",
        "WS-PKL-002": "error",
        "WS-ST-001": "note",
        "WS-ZIP-001": "warning",
    }
    scores = {r["id"]: r["properties"]["security-severity"] for r in rules}
    assert scores == {rid: SECURITY_SEVERITY[info.severity] for rid, info in RULES.items()}
    assert sorted(SECURITY_SEVERITY.values(), key=float) == ["0.0", "3.0", "5.5", "8.0", "9.5"]

    only_one = sarif_of(make_report(make_findings()[:1]))["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in only_one] == ["WS-GEN-001"]


def test_sarif_results_locate_members_and_offsets() -> None:
    run = sarif_of(make_report())["runs"][0]
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert [r["ruleId"] for r in results] == [f.rule_id for f in ordered_findings(make_findings())]
    for result in results:
        assert rule_ids[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["region"] == {"startLine": 1}
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    first, second = results[0], results[1]
    assert first["level"] == "error"
    assert first["message"]["text"] == (
        "Loading runs os.system: it can execute arbitrary commands (at byte offset 42)"
    )
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/evil.pkl"
    assert first["properties"] == {
        "severity": "critical",
        "offset": 42,
        "evidence": {"callable": "os.system", "opcode": "REDUCE"},
    }
    assert second["message"]["text"] == (
        "Unknown import mylib.Loader (in member a.tar!x.zip!data.pkl at byte offset 1234)"
    )
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == ODD_URI
    assert second["properties"]["member"] == "a.tar!x.zip!data.pkl"
    assert [r["level"] for r in results] == ["error", "error", "error", "warning", "note", "note"]


def test_sarif_message_cannot_inject_links() -> None:
    hostile = Finding(
        "WS-PKL-002", Severity.HIGH, "Unknown import [click](https://evil.example)", Location("x.pkl"), {}
    )
    text = sarif_of(make_report([hostile]))["runs"][0]["results"][0]["message"]["text"]
    assert text == "Unknown import \\[click\\](https://evil.example)"


def test_sarif_uri_relative_to_explicit_srcroot(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    inside = Finding("WS-PKL-001", Severity.CRITICAL, "m", Location(str(root / "sub dir" / "a.pkl")), {})
    outside = Finding("WS-PKL-001", Severity.CRITICAL, "m", Location(str(tmp_path / "other" / "b.pkl")), {})
    via_cwd = Finding("WS-PKL-001", Severity.CRITICAL, "m", Location("repo/c.pkl"), {})
    log = sarif_of(make_report([inside, outside, via_cwd]), srcroot=root, github=False)
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == root.as_uri() + "/"
    locations = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["locations"][0][
            "physicalLocation"
        ]["artifactLocation"]
        for r in run["results"]
    }
    assert locations["sub%20dir/a.pkl"] == {"uri": "sub%20dir/a.pkl", "uriBaseId": "%SRCROOT%"}
    assert locations["c.pkl"] == {"uri": "c.pkl", "uriBaseId": "%SRCROOT%"}
    absolute = (tmp_path / "other" / "b.pkl").as_uri()
    assert locations[absolute] == {"uri": absolute}
    problems = check_github_requirements(log)
    assert len(problems) == 1 and "absolute" in problems[0]


def test_sarif_fingerprints_are_stable_across_runs_and_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fingerprints(report: Report) -> list[str]:
        return [
            r["partialFingerprints"]["primaryLocationLineHash"]
            for r in sarif_of(report)["runs"][0]["results"]
        ]

    for machine in ("a", "b"):
        (tmp_path / machine).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    on_a = fingerprints(make_report(duration=1.0))
    assert on_a == fingerprints(make_report(duration=99.0))
    monkeypatch.chdir(tmp_path / "b")
    assert fingerprints(make_report(duration=2.0)) == on_a
    assert render_sarif(make_report(duration=1.0)) == render_sarif(make_report(duration=2.0))
    assert all(len(fp) == 64 and int(fp, 16) >= 0 for fp in on_a)
    assert len(set(on_a)) == len(on_a)  # the two WS-PKL-002 results differ only by member


def test_sarif_fingerprint_follows_rule_path_member_and_evidence() -> None:
    base = Finding("WS-PKL-002", Severity.HIGH, "m", Location("a.zip", "x.pkl", 10), {"module": "m", "n": 1})

    def fp(finding: Finding) -> str:
        result = sarif_of(make_report([finding]))["runs"][0]["results"][0]
        return str(result["partialFingerprints"]["primaryLocationLineHash"])

    reference = fp(base)
    same = [
        Finding("WS-PKL-002", Severity.HIGH, "m", Location("a.zip", "x.pkl", 99), {"module": "m", "n": 1}),
        Finding(
            "WS-PKL-002",
            Severity.CRITICAL,
            "other text",
            Location("a.zip", "x.pkl", 10),
            {"n": 1, "module": "m"},
        ),
    ]
    different = [
        Finding("WS-PKL-001", Severity.HIGH, "m", Location("a.zip", "x.pkl", 10), {"module": "m", "n": 1}),
        Finding("WS-PKL-002", Severity.HIGH, "m", Location("b.zip", "x.pkl", 10), {"module": "m", "n": 1}),
        Finding("WS-PKL-002", Severity.HIGH, "m", Location("a.zip", "y.pkl", 10), {"module": "m", "n": 1}),
        Finding("WS-PKL-002", Severity.HIGH, "m", Location("a.zip", "x.pkl", 10), {"module": "m", "n": "1"}),
    ]
    assert all(fp(f) == reference for f in same)
    assert all(fp(f) != reference for f in different)


def test_sarif_unknown_rule_gets_a_descriptor() -> None:
    finding = Finding("WS-NEW-999", Severity.MEDIUM, "new", Location("x.pkl"), {})
    log = sarif_of(make_report([finding]))
    sarif_validator().validate(log)
    assert check_github_requirements(log) == []
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "WS-NEW-999" and rule["properties"]["security-severity"] == "5.5"


def test_sarif_caps_results_per_rule() -> None:
    noisy = [Finding("WS-PKL-002", Severity.HIGH, "m", Location(f"f{i:05}.pkl"), {}) for i in range(5_003)]
    worst = [Finding("WS-PKL-001", Severity.CRITICAL, "m", Location(f"g{i}.pkl"), {}) for i in range(2)]
    log = sarif_of(make_report(noisy + worst))
    run = log["runs"][0]
    assert len(run["results"]) == 5_002
    assert sum(r["ruleId"] == "WS-PKL-002" for r in run["results"]) == 5_000
    assert run["properties"]["omittedResults"] == 3
    assert run["properties"]["totalResults"] == 5_005
    assert "3 of 5005 results were left out, least severe first" in run["properties"]["note"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes[-1]["level"] == "warning" and notes[-1]["message"]["text"] == run["properties"]["note"]
    assert check_github_requirements(log) == []


def test_sarif_caps_results_per_run_worst_first() -> None:
    log = sarif_of(make_report(), max_per_rule=2, max_results=3)
    sarif_validator().validate(log)
    run = log["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["WS-PKL-001", "WS-PKL-002", "WS-PKL-002"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["WS-PKL-001", "WS-PKL-002"]
    assert run["properties"]["omittedResults"] == 3


def test_sarif_default_run_cap_is_githubs_limit() -> None:
    findings = [
        Finding(f"WS-R-{rule:02}", Severity.LOW, "m", Location(f"f{i:04}.pkl"), {})
        for rule in range(26)
        for i in range(1_000)
    ]
    log = to_sarif(make_report(findings))
    assert check_github_requirements(dict(log)) == []
    # Schema-check the run with a slice of its results: every result comes from the same code, and
    # validating 25,000 of them with jsonschema takes half a minute.
    sample = copy.deepcopy(dict(log))
    sample["runs"][0]["results"] = log["runs"][0]["results"][:50] + log["runs"][0]["results"][-50:]
    sarif_validator().validate(sample)
    assert len(log["runs"][0]["results"]) == 25_000
    assert log["runs"][0]["properties"]["omittedResults"] == 1_000


def test_github_check_reports_problems() -> None:
    log = sarif_of(make_report())  # valid; then broken on purpose
    broken = copy.deepcopy(log)
    run = broken["runs"][0]
    run["tool"]["driver"]["rules"][0]["properties"]["security-severity"] = "11"
    run["tool"]["driver"]["rules"][1]["properties"]["tags"] = []
    del run["results"][0]["partialFingerprints"]
    run["results"][1]["ruleId"] = "WS-MISSING"
    run["results"][2]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    run["results"][3]["message"]["text"] = ""
    run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = "file:///no/slash"
    problems = "\n".join(check_github_requirements(broken))
    for expected in (
        "outside 0-10",
        "'security' tag",
        "partialFingerprints",
        "WS-MISSING",
        "startLine",
        "message.text",
        "end with '/'",
    ):
        assert expected in problems
    assert check_github_requirements({"version": "2.1.0", "$schema": "x", "runs": []}) == ["no runs"]


def test_render_dispatches_and_rejects_unknown_formats() -> None:
    report = make_report()
    assert FORMATS == ("text", "json", "sarif")
    assert render(report, "text") == render_text(report, color=False)
    assert render(report, "json") == render_json(report)
    assert render(report, "sarif") == render_sarif(report)
    with pytest.raises(ValueError, match="unknown output format"):
        render(report, "xml")


def test_clean_escapes_every_control_format_and_unassigned_character() -> None:
    from wscan.output.text import clean

    assert clean("models/pytorch_model.bin!data.pkl") == "models/pytorch_model.bin!data.pkl"
    assert clean("modèle/权重.bin") == "modèle/权重.bin"  # printable non-ASCII stays
    for hostile in ("\x1b[31m", "a\nb", "\u202etxt.exe", "\u200b", "\x7f", "\ud800", "\U000e0001", "\u0378"):
        cleaned = clean(hostile)
        assert cleaned.isprintable() and cleaned != hostile, repr(hostile)
