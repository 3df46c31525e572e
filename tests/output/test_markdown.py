"""The job summary renderer: per-folder tables, rule links, escaping of hostile names, size budget."""

from __future__ import annotations

import re

from wscan.model import Finding, Location, Severity
from wscan.output.markdown import md, prose, render_markdown
from wscan.report import FileResult, ModelSummary, Report, RuleInfo

RULE = RuleInfo(
    "WS-PKL-001", "pickle-imports-code-execution", Severity.CRITICAL, "A pickle imports a gadget",
    "Loading runs code.", "Do not load\n  this file.",
)


def model(path: str, worst: Severity | None = None) -> ModelSummary:
    return ModelSummary(
        path, 2, 2048, 0, ("pickle",), ("F32",), 10, "", "full", "", "LlamaForCausalLM", False, "mit", worst,
        "fail" if worst else "pass",
    )


def report(findings: list[Finding], models: list[ModelSummary] | None = None) -> Report:
    files = [FileResult(f.location.path, 10, ("pickle",), "scanned", "", f.severity) for f in findings]
    files += [
        FileResult("docs/readme.txt", 5, (), "skipped", "file.text"),
        FileResult("big/model.safetensors", 130, (), "skipped", "lfs_pointer"),
    ]
    return Report(
        "0.1.0", "", Severity.HIGH, files=files, findings=findings, rules={RULE.id: RULE}, models=models or []
    )


def gadget(path: str, member: str | None = None, message: str = "Loading imports os.system") -> Finding:
    return Finding("WS-PKL-001", Severity.CRITICAL, message, Location(path, member, 2), {})


def test_summary_groups_findings_by_model_folder_with_rule_links() -> None:
    findings = [gadget("models/a/x.bin"), gadget("models/a/sub.zip", "inner/y.pkl"), gadget("models/b/z.pt")]
    url = "https://github.com/acme/wscan/blob/abc/rules/pickle.yaml#L3"
    text = render_markdown(
        report(findings, [model("models/a", Severity.CRITICAL), model("models/b", Severity.CRITICAL), model("ok")]),
        intro="Scanned the pull request.",
        rule_links={"WS-PKL-001": url},
    )
    assert text.startswith("## :x: wscan: fail (fails on high and above)\n\nScanned the pull request.\n")
    assert "| 3 | 0 | 0 | 0 | 0 | 3 | 1 | 0 | 1 |" in text  # the text file is counted apart
    sections = re.findall(r"^### (.*)$", text, re.M)
    assert sections == [":x: models/a", ":x: models/b", ":white_check_mark: ok", "Rules", "Not scanned"]
    assert "| critical | [WS-PKL-001](" + url + ") | x\\.bin | byte 2 |" in text
    assert "| sub\\.zip | member inner/y\\.pkl, byte 2 |" in text
    assert "2 files; 2\\.0 kB; 10 parameters; F32; formats\\: pickle; architecture LlamaForCausalLM" in text
    assert "pickle\\-imports" not in text and "pickle-imports-code-execution (critical)" in text
    assert "**What to do:** Do not load this file\\." in text  # rule prose folded onto one line
    assert "- skipped big/model\\.safetensors: lfs\\_pointer" in text and "readme" not in text


def test_hostile_names_and_messages_render_literally() -> None:
    hostile = [
        gadget("m/![img](https://evil.example/x.png).pkl"),
        gadget("m/<script>alert(1)</script>|x.pkl", message="Loading $$\\sqrt{x}$$ [click](https://evil) www.evil.com"),
        gadget("m/line\nbreak.pkl", message="`code` **bold** @someone :rocket: &amp;"),
    ]
    text = render_markdown(report(hostile), rule_links={"WS-PKL-001": "javascript:alert(1)"})
    assert "](https://evil" not in text and "<script>" not in text and "![" not in text
    assert "$$" not in text and "www.evil.com" not in text and "**bold**" not in text
    assert "[WS-PKL-001](" not in text  # only https links are made
    for row in (line for line in text.splitlines() if line.startswith("| critical | WS")):
        assert len(re.findall(r"(?<!\\)\|", row)) == 6  # hostile pipes cannot add columns
    assert "line\\\\x0abreak" in text  # a newline in a name stays visible
    assert md("a_b*c") == "a\\_b\\*c" and prose("a\n  b") == "a b"


def test_summary_stays_within_its_budget_and_says_what_it_left_out() -> None:
    findings = [gadget(f"m{i:03}/x.pkl", message="x" * 500) for i in range(300)]
    small = render_markdown(report(findings), max_bytes=20_000)
    assert len(small.encode()) <= 20_000
    shown = small.count("| critical | WS")
    assert 0 < shown < 300
    assert f"_{300 - shown} more findings are not shown here" in small
    rows = render_markdown(report(findings), max_rows=5)
    assert rows.count("| critical | WS") == 5 and "_295 more findings" in rows


def test_verdict_override_and_clean_report() -> None:
    clean = render_markdown(Report("0.1.0", "", Severity.HIGH))
    assert clean.startswith("## :white_check_mark: wscan: pass")
    assert "### Rules" not in clean
    forced = render_markdown(Report("0.1.0", "", Severity.HIGH), verdict="fail")
    assert forced.startswith("## :x: wscan: fail")


def test_long_hostile_names_cannot_crowd_out_the_findings() -> None:
    """A name of 4 KiB of undecodable bytes grows sevenfold when escaped: 40 of them in 'Not scanned' took the
    whole budget (no finding row left, yet 'more findings are not shown') or went past GitHub's 1 MiB."""
    name = "m/" + "\udcff" * 3800
    files = [FileResult(f"{name}{i}.bin", 10, (), "failed", "pickle.truncated") for i in range(40)]
    findings = [gadget("models/evil/x.pkl"), gadget("m/" + "\udcfe" * 3800 + ".pkl", message="y" * 5000)]
    text = render_markdown(Report("0.1.0", "", Severity.HIGH, files=files, findings=findings, rules={RULE.id: RULE}))
    assert len(text.encode()) <= 900_000
    assert "x\\.pkl" in text and text.count("| critical | WS") == 2
    assert "more findings are not shown" not in text
    row = next(line for line in text.splitlines() if "\\\\udcfe" in line)
    assert len(row) < 4000 and "…" in row  # cut in the middle, both ends kept
    assert "- and" in text or text.count("- failed m/") == 40
