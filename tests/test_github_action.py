"""The GitHub Action, driven as GitHub would drive it, over real temporary git repositories.

Two levels: the entry point (`python -m wscan.github_action`) with the GITHUB_* files and the WSCAN_*
variables action.yml declares; and action.yml's own `run:` steps executed with bash, their `env:`
expressions evaluated from fake contexts, so the real shell code runs (setup-python is skipped).
Hostile models are built from bytes and never loaded.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from safetensors.numpy import save_file

from tests.helpers.github_sarif import check_github_requirements
from wscan import __version__
from wscan.github_action import command, escape_data, escape_property, format_outputs

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "tests" / "data" / "schemas"
ACTION = ROOT / "action.yml"
# Protocol 2: GLOBAL os.system, BINUNICODE "id", TUPLE1, REDUCE, STOP. Never unpickled.
HOSTILE_PICKLE = b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03."
LFS_POINTER = (
    b"version https://git-lfs.github.com/spec/v1\n"
    b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


# --- a repository with a base and a head commit ------------------------------------------------


@dataclass
class Repo:
    root: Path
    base: str = ""
    head: str = ""

    def git(self, *args: str) -> str:
        done = subprocess.run([*GIT, *args], cwd=self.root, capture_output=True, check=True)
        return done.stdout.decode()

    def write(self, name: str, data: bytes | str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
        return path

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def make_repo(root: Path, head_files: Callable[[Repo], None], base_files: Callable[[Repo], None] | None = None) -> Repo:
    root.mkdir(parents=True)
    repo = Repo(root)
    repo.git("init", "-q", "-b", "main")
    repo.write("README.md", "# project\n")
    repo.write("src/app.py", "import subprocess\nsubprocess.run(['ls'])\n")
    if base_files:
        base_files(repo)
    repo.base = repo.commit("base")
    head_files(repo)
    repo.head = repo.commit("head")
    return repo


def benign_models(repo: Repo) -> None:
    """A safetensors model and a NumPy array, written by the real libraries, plus text and source."""
    folder = repo.root / "models" / "good"
    folder.mkdir(parents=True, exist_ok=True)
    save_file({"weight": np.arange(6, dtype=np.float32).reshape(2, 3)}, str(folder / "model.safetensors"))
    np.save(folder / "stats.npy", np.zeros(4, dtype=np.float32))
    repo.write("docs/notes.md", "Some *notes* about the models.\n")
    repo.write("src/train.py", "import os\nos.system('echo train')\n")


def hostile_and_benign(repo: Repo) -> None:
    benign_models(repo)
    repo.write("models/evil/pytorch_model.bin", HOSTILE_PICKLE)


@pytest.fixture
def pr_repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path / "repo", hostile_and_benign)


# --- running the entry point as GitHub would ---------------------------------------------------


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    root: Path
    sarif: dict[str, Any] = field(default_factory=dict)

    def annotations(self, level: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(f"::{level} ")]


def event_file(tmp: Path, event_name: str, repo: Repo) -> Path:
    if event_name == "pull_request":
        event: dict[str, Any] = {
            "action": "synchronize",
            "number": 7,
            "pull_request": {"base": {"sha": repo.base, "ref": "main"}, "head": {"sha": repo.head, "ref": "feature"}},
        }
    elif event_name == "push":
        event = {"before": repo.base, "after": repo.head, "ref": "refs/heads/main"}
    else:
        event = {}
    path = tmp / f"event-{event_name}.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


def github_env(repo: Repo, tmp: Path, event_name: str = "pull_request", **wscan: str) -> dict[str, str]:
    """The variables the runner sets, plus the WSCAN_* ones action.yml's scan step declares."""
    tmp.mkdir(parents=True, exist_ok=True)
    output, summary = tmp / "github_output", tmp / "step_summary"
    output.write_text("")
    summary.write_text("")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp)),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_file(tmp, event_name, repo)),
        "GITHUB_WORKSPACE": str(repo.root),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_REPOSITORY": "octo/models",
        "GITHUB_SHA": repo.head,
        "GITHUB_SERVER_URL": "https://github.com",
        "RUNNER_TEMP": str(tmp),
        "WSCAN_ACTION_PATH": str(ROOT),
        "WSCAN_ACTION_REPOSITORY": "acme/wscan",
        "WSCAN_ACTION_REF": "0123456789abcdef0123456789abcdef01234567",
    }
    env.update({f"WSCAN_{key.upper()}": value for key, value in wscan.items()})
    return env


def run_entry_point(
    repo: Repo, tmp: Path, event_name: str = "pull_request", extra_env: dict[str, str] | None = None, **wscan: str
) -> Run:
    env = {**github_env(repo, tmp, event_name, **wscan), **(extra_env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "wscan.github_action"], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    run = Run(
        done.returncode,
        done.stdout,
        done.stderr,
        parse_outputs(Path(env["GITHUB_OUTPUT"]).read_text()),
        Path(env["GITHUB_STEP_SUMMARY"]).read_text(),
        repo.root,
    )
    sarif = repo.root / run.outputs.get("sarif", "wscan.sarif")
    if sarif.is_file():
        run.sarif = json.loads(sarif.read_text())
    return run


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it: `name=value` lines and `name<<DELIMITER` blocks."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        i += 1
    return values


def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def assert_valid_sarif(log: dict[str, Any]) -> None:
    assert [e.message for e in sarif_validator().iter_errors(log)] == []
    assert check_github_requirements(log) == []


def fingerprints(log: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["ruleId"], r["partialFingerprints"]["primaryLocationLineHash"]) for r in log["runs"][0]["results"]]


# --- action.yml --------------------------------------------------------------------------------


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def test_action_yml_validates_against_the_action_schema() -> None:
    schema = json.loads((SCHEMAS / "github-action.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(load_action())


def test_inputs_reach_scripts_only_through_env() -> None:
    """A `${{ }}` inside `run:` is spliced into the script text: script injection."""
    action = load_action()
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step.get("name")
            assert step["shell"] == "bash"
    declared = set(action["inputs"])
    used = set()
    for step in action["runs"]["steps"]:
        for value in [*step.get("env", {}).values(), *step.get("with", {}).values(), step.get("if", "")]:
            used |= set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", str(value)))
    assert used == declared  # every input is wired, and nothing refers to an undeclared one


def test_outputs_are_the_scan_steps() -> None:
    outputs = load_action()["outputs"]
    assert {"sarif", "critical", "high", "medium", "low", "verdict"} <= set(outputs)
    for name, spec in outputs.items():
        assert spec["value"] == f"${{{{ steps.scan.outputs.{name} }}}}"


# --- the entry point ---------------------------------------------------------------------------


def test_pull_request_with_a_hostile_model_fails(pr_repo: Repo, tmp_path: Path) -> None:
    run = run_entry_point(pr_repo, tmp_path / "gh")
    assert run.code == 1, run.stderr
    assert run.stderr == ""
    # outputs
    assert run.outputs["verdict"] == "fail"
    assert run.outputs["sarif"] == "wscan.sarif"
    assert (run.outputs["critical"], run.outputs["high"], run.outputs["medium"], run.outputs["low"]) == (
        "1", "0", "0", "0"
    )
    assert run.outputs["model-dirs"].splitlines() == ["models/evil", "models/good"]
    # annotations: one error on the hostile file, nothing on text, source or the benign model
    errors = run.annotations("error")
    assert errors == [
        "::error file=models/evil/pytorch_model.bin,title=WS-PKL-001 (critical)::"
        + errors[0].split("::", 2)[2]
    ]
    assert "os.system" in errors[0]
    assert run.annotations("warning") == [] and run.annotations("notice") == []
    # the text report is in the log with workflow commands switched off around it
    token = re.search(r"^::stop-commands::([0-9a-f]{32})$", run.stdout, re.M)
    assert token is not None and f"\n::{token.group(1)}::\n" in run.stdout
    # summary: verdict, the model folder table with a rule link, the benign folder passes
    summary = run.summary
    assert summary.startswith("## :x: wscan: fail (fails on high and above)")
    assert "Scanned the 5 files that this change adds or modifies" in summary
    assert "### :x: models/evil" in summary and "### :white_check_mark: models/good" in summary
    blob = r"https://github\.com/acme/wscan/blob/[0-9a-f]{40}/rules/pickle\.yaml#L(\d+)"
    link = re.search(rf"\[WS-PKL-001\]\(({blob})\)", summary)
    assert link is not None
    line = (ROOT / "rules" / "pickle.yaml").read_text().splitlines()[int(link.group(2)) - 1]
    assert "WS-PKL-001" in line
    assert "| critical | [WS-PKL-001]" in summary and "pytorch\\_model\\.bin" in summary
    assert "docs" not in summary.split("### Rules")[0].split("###", 1)[1]  # text files are not listed
    # SARIF: valid, relative URI, rule metadata, help link
    assert_valid_sarif(run.sarif)
    (result,) = run.sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "models/evil/pytorch_model.bin",
        "uriBaseId": "%SRCROOT%",
    }
    (rule,) = run.sarif["runs"][0]["tool"]["driver"]["rules"]
    assert rule["helpUri"] == link.group(1)
    assert rule["properties"]["security-severity"] == "9.5" and rule["help"]["markdown"]
    assert run.sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == pr_repo.root.as_uri() + "/"


def test_pull_request_with_benign_models_and_code_passes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", benign_models)
    run = run_entry_point(repo, tmp_path / "gh")
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["verdict"] == "pass"
    assert run.outputs["critical"] == run.outputs["high"] == "0"
    assert run.annotations("error") == [] and run.annotations("warning") == []
    assert run.summary.startswith("## :white_check_mark: wscan: pass")
    assert_valid_sarif(run.sarif)
    assert run.sarif["runs"][0]["results"] == []


def test_two_runs_give_identical_fingerprints_across_clones(pr_repo: Repo, tmp_path: Path) -> None:
    first = run_entry_point(pr_repo, tmp_path / "gh1")
    again = run_entry_point(pr_repo, tmp_path / "gh2")
    clone = Repo(tmp_path / "elsewhere" / "clone")
    subprocess.run(["git", "clone", "-q", str(pr_repo.root), str(clone.root)], check=True)
    clone.base, clone.head = pr_repo.base, pr_repo.head
    other_machine = run_entry_point(clone, tmp_path / "gh3")
    assert fingerprints(first.sarif) == fingerprints(again.sarif) == fingerprints(other_machine.sarif)
    assert len(fingerprints(first.sarif)) == 1
    for run in (first, again, other_machine):
        assert_valid_sarif(run.sarif)


def test_only_changed_files_are_scanned(tmp_path: Path) -> None:
    """A hostile file already on the base branch is not this pull request's finding."""
    repo = make_repo(
        tmp_path / "repo", benign_models, base_files=lambda r: r.write("old/evil.pkl", HOSTILE_PICKLE) and None
    )
    run = run_entry_point(repo, tmp_path / "gh")
    assert run.code == 0 and run.outputs["critical"] == "0"
    push = run_entry_point(repo, tmp_path / "push", event_name="push")  # a push scans everything
    assert push.code == 1 and push.outputs["critical"] == "1"
    assert "Scanned the whole repository" in push.summary
    # .git is left out: its zlib-compressed copy of old/evil.pkl would be a second critical finding
    (result,) = push.sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "old/evil.pkl"


def test_paths_input_restricts_the_scan(pr_repo: Repo, tmp_path: Path) -> None:
    only_good = run_entry_point(pr_repo, tmp_path / "a", paths="models/good\n")
    assert only_good.code == 0 and only_good.outputs["model-dirs"] == "models/good"
    glob_all = run_entry_point(pr_repo, tmp_path / "b", paths="models/*/*.bin", scope="all")
    assert glob_all.code == 1 and glob_all.outputs["critical"] == "1"
    threshold = run_entry_point(pr_repo, tmp_path / "c", **{"fail_on": "critical"})
    assert threshold.code == 1
    info_only = run_entry_point(pr_repo, tmp_path / "d", paths="docs\nsrc")
    assert info_only.code == 0 and info_only.outputs["findings"] == "0"


def test_unfetched_lfs_file_is_a_clear_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", lambda r: r.write("models/big/model.safetensors", LFS_POINTER) and None)
    run = run_entry_point(repo, tmp_path / "gh")
    assert run.code == 1
    assert run.outputs["verdict"] == "fail" and run.outputs["medium"] == "1"
    (error,) = run.annotations("error")
    assert error.startswith("::error file=models/big/model.safetensors,title=Git LFS file not fetched::")
    assert "`lfs: true`" in error
    assert "Git LFS pointers were not fetched" in run.summary and run.summary.startswith("## :x:")


def test_pull_request_cannot_weaken_its_own_scan(tmp_path: Path) -> None:
    """Config and rule packs come from the base commit; a pull request's own .wscan.yaml is not used."""

    def weaken(repo: Repo) -> None:
        hostile_and_benign(repo)
        repo.write(".wscan.yaml", 'ignore:\n  - rule: "*"\n    paths: ["*", "**/*"]\nfail-on: critical\n')
        repo.write("models/evil/.wscan.yaml", 'ignore:\n  - rule: "*"\n    paths: ["*"]\n')

    repo = make_repo(tmp_path / "new", weaken)
    run = run_entry_point(repo, tmp_path / "gh1")
    assert run.code == 1 and run.outputs["critical"] == "1"
    assert any(".wscan.yaml is new in this pull request" in line for line in run.annotations("warning"))

    def base_config(repo: Repo) -> None:
        repo.write(".wscan.yaml", "fail-on: high\nrules: [policy/extra.yaml]\n")
        repo.write("policy/extra.yaml", "pack: extra\nrules: []\n")

    def change_config(repo: Repo) -> None:
        hostile_and_benign(repo)
        repo.write(".wscan.yaml", 'fail-on: high\nignore:\n  - rule: "*"\n    paths: ["models/*"]\n')

    changed = make_repo(tmp_path / "changed", change_config, base_files=base_config)
    run = run_entry_point(changed, tmp_path / "gh2")
    assert run.code == 1 and run.outputs["critical"] == "1"
    (warning,) = run.annotations("warning")
    assert "this pull request changes .wscan.yaml" in warning
    push = run_entry_point(changed, tmp_path / "gh3", event_name="push")  # once merged, the config applies
    assert push.code == 0 and push.outputs["critical"] == "0"


def test_hostile_file_names_cannot_forge_workflow_commands(tmp_path: Path) -> None:
    name = "models/x/evil\n::error::forged%0A,title=x:y.bin"
    repo = make_repo(tmp_path / "repo", lambda r: r.write(name, HOSTILE_PICKLE) and None)
    run = run_entry_point(repo, tmp_path / "gh")
    assert run.code == 1
    inside = False
    commands = []
    for line in run.stdout.splitlines():
        if line.startswith("::stop-commands::"):
            inside = True
        elif inside and re.fullmatch(r"::[0-9a-f]{32}::", line):
            inside = False
        elif not inside and line.startswith("::"):
            commands.append(line)
    (error,) = commands  # the hostile name made no command of its own
    props, message = error[len("::error "):].split("::", 1)
    assert props.startswith("file=models/x/evil\\x0a%3A%3Aerror%3A%3Aforged%250A%2Ctitle=x%3Ay.bin,title=")
    assert "\n" not in message and "::forged" not in message
    assert "::error::forged" not in run.summary
    assert "| evil\\\\x0a\\:\\:error\\:\\:forged%0A,title=x\\:y\\.bin" in run.summary
    assert_valid_sarif(run.sarif)


def test_parser_warnings_cannot_forge_workflow_commands(tmp_path: Path) -> None:
    """Python printed a warning headed by a hostile file name (a SyntaxWarning on 3.12, a DeprecationWarning
    shown when warnings are on) to stderr before the report's stop-commands: the runner would have masked
    'CRITICAL' and stopped every later annotation with the attacker's own token."""
    name = "models/m/x\n::add-mask::CRITICAL\n::stop-commands::attacker\ny.py"

    def files(r: Repo) -> None:
        r.write("models/m/config.json", '{"model_type": "bert"}')
        r.write(name, 'pattern = "\\d+"\n')
        r.write("models/m/pytorch_model.bin", HOSTILE_PICKLE)

    repo = make_repo(tmp_path / "repo", files)
    run = run_entry_point(repo, tmp_path / "gh", extra_env={"PYTHONWARNINGS": "always"})
    assert run.code == 1
    assert "::" not in run.stderr and "Warning" not in run.stderr
    first = run.stdout.splitlines()[0]
    token = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", first)
    assert token is not None  # commands are off before the scan opens a file
    after = run.stdout.split(f"\n::{token.group(1)}::\n", 1)[1]
    assert not any(line.startswith(("::add-mask", "::stop-commands")) for line in after.splitlines())
    assert any("WS-PKL-001" in line for line in run.annotations("error"))


@pytest.mark.parametrize(
    ("event", "env", "message"),
    [
        ("pull_request", {"fail_on": "urgent"}, "fail-on: unknown severity 'urgent'"),
        ("pull_request", {"scope": "some"}, "scope must be one of auto, changed, all"),
        ("workflow_dispatch", {"scope": "changed"}, "scope 'changed' needs a pull_request"),
        ("push", {"paths": "missing/"}, "paths: missing/ does not exist in the checkout"),
        ("push", {"config": "nope.yaml"}, "config file not found: nope.yaml"),
    ],
)
def test_bad_inputs_are_usage_errors(
    pr_repo: Repo, tmp_path: Path, event: str, env: dict[str, str], message: str
) -> None:
    run = run_entry_point(pr_repo, tmp_path / "gh", event_name=event, **env)
    assert run.code == 2
    assert run.stdout.startswith("::error title=wscan::" + escape_data(message))
    assert run.outputs == {}


def test_missing_commits_say_to_fetch_history(pr_repo: Repo, tmp_path: Path) -> None:
    shallow = Repo(tmp_path / "shallow")
    subprocess.run(["git", "clone", "-q", "--depth", "1", pr_repo.root.as_uri(), str(shallow.root)], check=True)
    shallow.base, shallow.head = pr_repo.base, pr_repo.head
    run = run_entry_point(shallow, tmp_path / "gh")
    assert run.code == 2
    assert f"the base commit {pr_repo.base} is not in the checkout" in run.stdout
    assert "fetch-depth: 0" in run.stdout


def test_event_text_never_reaches_git_as_an_option(pr_repo: Repo, tmp_path: Path) -> None:
    env = github_env(pr_repo, tmp_path / "gh")
    Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps(
        {"pull_request": {"base": {"sha": "--output=/tmp/pwned"}, "head": {"sha": pr_repo.head}}}
    ))
    done = subprocess.run([sys.executable, "-m", "wscan.github_action"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "where a commit SHA belongs" in done.stdout


def test_workflow_command_escaping() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    line = command("warning", "line1\nline2 100%", file="dir/a,b:c.bin", title="T: x")
    assert line == "::warning file=dir/a%2Cb%3Ac.bin,title=T%3A x::line1\\x0aline2 100%25\n"
    assert command("error", "m") == "::error::m\n"
    text = format_outputs({"model-dirs": "a\nb", "verdict": "pass"})
    assert parse_outputs(text) == {"model-dirs": "a\nb", "verdict": "pass"}


def test_annotations_are_capped_per_level(tmp_path: Path) -> None:
    def many(repo: Repo) -> None:
        for i in range(13):
            repo.write(f"models/m{i:02}/model.pkl", HOSTILE_PICKLE)

    repo = make_repo(tmp_path / "repo", many)
    run = run_entry_point(repo, tmp_path / "gh")
    assert run.code == 1 and run.outputs["critical"] == "13"
    assert len(run.annotations("error")) == 10
    (notice,) = run.annotations("notice")
    assert "3 more findings are not annotated" in notice


# --- action.yml's shell steps, run with bash ----------------------------------------------------


class Expressions:
    """Just enough of GitHub's expression language for action.yml: contexts, literals, ==, !=, &&, ||, !."""

    TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||!|\(|\))|([A-Za-z_][A-Za-z0-9_.-]*(?:\(\))?))")

    def __init__(self, contexts: Mapping[str, str]) -> None:
        self.contexts = contexts

    def evaluate(self, text: str) -> str | bool:
        self.tokens = [t for t in self._tokenize(text)]
        self.pos = 0
        value = self._or()
        assert self.pos == len(self.tokens), text
        return value

    def substitute(self, text: str) -> str:
        return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: self._string(self.evaluate(m.group(1))), str(text))

    def truthy(self, text: str) -> bool:
        expression = text.strip()
        if expression.startswith("${{"):
            expression = expression[3:].rstrip()[:-2]
        return bool(self.evaluate(expression))

    def _tokenize(self, text: str) -> list[str]:
        tokens, pos = [], 0
        while text[pos:].strip():
            match = self.TOKEN.match(text, pos)
            assert match is not None, text[pos:]
            tokens.append(next(g for g in match.groups() if g is not None))
            pos = match.end()
        return tokens

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        self.pos += 1
        return self.tokens[self.pos - 1]

    def _or(self) -> str | bool:
        value = self._and()
        while self._peek() == "||":
            self._take()
            right = self._and()
            value = value if value else right
        return value

    def _and(self) -> str | bool:
        value = self._not()
        while self._peek() == "&&":
            self._take()
            right = self._not()
            value = right if value else value
        return value

    def _not(self) -> str | bool:
        if self._peek() == "!":
            self._take()
            return not self._not()
        left = self._primary()
        if self._peek() in ("==", "!="):
            op = self._take()
            right = self._primary()
            same = self._string(left).lower() == self._string(right).lower()
            return same if op == "==" else not same
        return left

    def _primary(self) -> str | bool:
        token = self._take()
        if token == "(":
            value = self._or()
            assert self._take() == ")"
            return value
        if token.startswith("'"):
            return token[1:-1].replace("''", "'")
        if token in ("always()", "success()"):
            return True
        if token in ("true", "false"):
            return token == "true"
        return self.contexts.get(token, "")

    @staticmethod
    def _string(value: str | bool) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else value


@dataclass
class StepRun:
    name: str
    ran: bool
    code: int = 0
    stdout: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


def run_composite(
    repo: Repo, tmp: Path, event_name: str, inputs: Mapping[str, str]
) -> tuple[list[StepRun], dict[str, str], str]:
    """Run action.yml's steps in order as the runner would: `if:`, `env:`, bash, per-step GITHUB_OUTPUT."""
    action = load_action()
    contexts: dict[str, str] = {f"inputs.{k}": str(v.get("default", "")) for k, v in action["inputs"].items()}
    contexts.update({f"inputs.{k}": v for k, v in inputs.items()})
    contexts.update({
        "github.action_path": str(ROOT),
        "github.event_name": event_name,
        "github.action_repository": "acme/wscan",
        "github.action_ref": "v1",
    })
    expressions = Expressions(contexts)
    base_env = github_env(repo, tmp, event_name)
    base_env = {k: v for k, v in base_env.items() if not k.startswith("WSCAN_")}  # only what steps declare
    # `python` is this interpreter, as setup-python would put one first on PATH.
    base_env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base_env["PATH"]])
    results: list[StepRun] = []
    for index, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {index}")
        if "uses" in step or ("if" in step and not expressions.truthy(step["if"])):
            results.append(StepRun(name, ran=False))
            continue
        output = tmp / f"output-{index}"
        output.write_text("")
        env = dict(base_env, GITHUB_OUTPUT=str(output))
        env.update({key: expressions.substitute(value) for key, value in step.get("env", {}).items()})
        script = tmp / f"step-{index}.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=repo.root, env=env, capture_output=True, text=True, timeout=300,
        )
        outputs = parse_outputs(output.read_text())
        results.append(StepRun(name, True, done.returncode, done.stdout + done.stderr, outputs))
        if "id" in step:
            contexts.update({f"steps.{step['id']}.outputs.{k}": v for k, v in outputs.items()})
        if done.returncode != 0:
            break  # later steps have no status function in their `if`: they are skipped
    action_outputs = {name: expressions.substitute(spec["value"]) for name, spec in action["outputs"].items()}
    return results, action_outputs, Path(base_env["GITHUB_STEP_SUMMARY"]).read_text()


def test_composite_steps_fail_a_hostile_pull_request(pr_repo: Repo, tmp_path: Path) -> None:
    steps, outputs, summary = run_composite(pr_repo, tmp_path / "gh", "pull_request", {"sign": "true"})
    names = [(s.name, s.ran, s.code) for s in steps]
    assert names == [
        ("Set up Python", False, 0),
        ("Install wscan from the action's checkout", True, 0),
        ("Scan model files", True, 0),
        ("Verify model signatures", False, 0),
        ("Fail on findings at or above the threshold", True, 1),
    ]
    install, scan = steps[1], steps[2]
    assert "already importable" in install.stdout and install.outputs["python"] == sys.executable
    assert scan.outputs["status"] == "1"
    assert "::error file=models/evil/pytorch_model.bin,title=WS-PKL-001 (critical)::" in scan.stdout
    assert outputs["verdict"] == "fail" and outputs["critical"] == "1" and outputs["sarif"] == "wscan.sarif"
    assert outputs["model-dirs"] == "models/evil\nmodels/good"
    assert_valid_sarif(json.loads((pr_repo.root / "wscan.sarif").read_text()))
    assert summary.startswith("## :x: wscan: fail") and "acme/wscan/blob/v1/rules/pickle.yaml#L" in summary


def test_composite_steps_pass_a_benign_push_and_skip_sign_and_verify_when_off(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", benign_models)
    steps, outputs, summary = run_composite(repo, tmp_path / "gh", "push", {"sarif": "out/scan.sarif"})
    ran = {s.name: (s.ran, s.code) for s in steps}
    assert ran == {
        "Set up Python": (False, 0),
        "Install wscan from the action's checkout": (True, 0),
        "Scan model files": (True, 0),
        "Verify model signatures": (False, 0),
        "Fail on findings at or above the threshold": (False, 0),
        "Sign models (keyless Sigstore)": (False, 0),
    }
    assert outputs["verdict"] == "pass" and outputs["sarif"] == "out/scan.sarif"
    assert summary.startswith("## :white_check_mark: wscan: pass") and "Scanned the whole repository" in summary
    assert_valid_sarif(json.loads((repo.root / "out" / "scan.sarif").read_text()))


def test_composite_sign_and_verify_guards() -> None:
    """Signing never runs on pull requests; both run only when asked (their commands are the lead's CLI)."""
    action = load_action()
    steps = {s.get("name"): s for s in action["runs"]["steps"]}
    sign, verify = steps["Sign models (keyless Sigstore)"], steps["Verify model signatures"]
    for event in ("pull_request", "pull_request_target"):
        assert not Expressions({"inputs.sign": "true", "github.event_name": event}).truthy(sign["if"])
    assert Expressions({"inputs.sign": "true", "github.event_name": "push"}).truthy(sign["if"])
    assert Expressions({"inputs.sign": "true", "github.event_name": "release"}).truthy(sign["if"])
    assert not Expressions({"inputs.sign": "false", "github.event_name": "push"}).truthy(sign["if"])
    assert Expressions({"inputs.verify-signatures": "true"}).truthy(verify["if"])
    assert not Expressions({"inputs.verify-signatures": "false"}).truthy(verify["if"])
    assert '-m wscan sign "$dir"' in sign["run"]
    assert '-m wscan verify "$dir" --identity "$WSCAN_IDENTITY" --issuer "$WSCAN_ISSUER"' in verify["run"]


def test_verify_without_identity_is_a_usage_error(pr_repo: Repo, tmp_path: Path) -> None:
    steps, _, _ = run_composite(pr_repo, tmp_path / "gh", "pull_request", {"verify-signatures": "true"})
    verify = next(s for s in steps if s.name == "Verify model signatures")
    assert verify.ran and verify.code == 2
    assert "::error title=wscan::verify-signatures needs verify-identity" in verify.stdout


WRAPPER = """#!/bin/bash
# `python` for the install step: the base interpreter, whose new venvs also see this test run's
# site-packages (a .pth file), so pip finds wscan's dependencies installed instead of downloading them.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  "$WSCAN_TEST_BASE_PYTHON" "$@" || exit $?
  purelib=$("${@: -1}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  printf '%s\\n' "$WSCAN_TEST_DEPS" > "$purelib/_wscan_test_deps.pth"
  exit 0
fi
exec "$WSCAN_TEST_BASE_PYTHON" "$@"
"""


def test_install_step_installs_into_its_own_venv(tmp_path: Path) -> None:
    """The install branch for real: a fresh venv and `pip install` of the action's checkout."""
    action = load_action()
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "install")
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").write_text(WRAPPER)
    (bare / "python").chmod(0o755)
    output = tmp_path / "output"
    output.write_text("")
    deps = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "yaml").is_dir())
    env = {
        "PATH": os.pathsep.join([str(bare), "/usr/bin", "/bin"]),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "WSCAN_ACTION_PATH": str(ROOT),
        "WSCAN_TEST_BASE_PYTHON": getattr(sys, "_base_executable", sys.executable),
        "WSCAN_TEST_DEPS": deps,
    }
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    script = tmp_path / "install.sh"
    script.write_text(step["run"])
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    python = parse_outputs(output.read_text())["python"]
    assert python == str(tmp_path / "wscan-venv" / "bin" / "python")
    found = subprocess.run(
        [python, "-c", "import wscan, sys; print(wscan.__version__, wscan.__file__)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    assert found[0] == __version__ and str(tmp_path / "wscan-venv") in found[1]
    rules = subprocess.run([python, "-m", "wscan", "rules", "list"], capture_output=True, text=True, check=True)
    assert "WS-PKL-001" in rules.stdout  # the rule packs were installed with the package


# --- the examples ------------------------------------------------------------------------------


def test_example_workflows() -> None:
    scan = yaml.safe_load((ROOT / "examples" / "wscan-scan.yml").read_text())
    job = next(iter(scan["jobs"].values()))
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    checkout, action, upload = job["steps"][:3]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["lfs"] is True and checkout["with"]["fetch-depth"] == 0
    assert action["uses"].endswith("/wscan@v1") and action["id"] == "wscan"
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3" and upload["if"] == "always()"
    assert upload["with"]["sarif_file"] == action["with"]["sarif"]
    release = yaml.safe_load((ROOT / "examples" / "wscan-sign-release.yml").read_text())
    job = next(iter(release["jobs"].values()))
    assert job["permissions"]["id-token"] == "write"
    assert any(s.get("with", {}).get("sign") == "true" for s in job["steps"])
    for workflow in (scan, release):
        for job in workflow["jobs"].values():
            for step in job["steps"]:
                assert "${{" not in step.get("run", "")


def test_rule_links_for_a_local_action_and_for_the_repositorys_own_packs(tmp_path: Path) -> None:
    from wscan.config import Config
    from wscan.github_action import Origin, Settings, rule_links
    from wscan.rules import RuleSet

    pack = tmp_path / "policy" / "mine.yaml"
    pack.parent.mkdir()
    pack.write_text(
        "pack: mine\nrules:\n  - id: MY-001\n    name: my-rule\n    severity: low\n    summary: s\n"
        "    message: m\n    match:\n      kind: pickle.import\n    metadata:\n      help: h\n"
    )
    rules = RuleSet.load(Config(rule_files=(pack,)))
    sha = "ab" * 20
    local = Settings(root=ROOT, action_path=ROOT, repository="octo/wscan", sha=sha)  # `uses: ./`
    links = rule_links(rules, ["WS-PKL-001", "MY-001", "NOPE"], local, Origin(tmp_path, "cd" * 20))
    assert re.fullmatch(rf"https://github\.com/octo/wscan/blob/{sha}/rules/pickle\.yaml#L\d+", links["WS-PKL-001"])
    assert links["MY-001"] == f"https://github.com/octo/wscan/blob/{'cd' * 20}/policy/mine.yaml#L3"
    assert "NOPE" not in links
    nested = Settings(root=tmp_path, action_path=tmp_path / "tools" / "wscan", repository="octo/models", sha=sha)
    assert rule_links(rules, ["WS-PKL-001"], nested, Origin(tmp_path, sha))["WS-PKL-001"].startswith(
        f"https://github.com/octo/models/blob/{sha}/tools/wscan/rules/pickle.yaml#L"  # `uses: ./tools/wscan`
    )
    elsewhere = Settings(root=tmp_path, action_path=tmp_path.parent, repository="octo/models", sha=sha)
    assert "WS-PKL-001" not in rule_links(rules, ["WS-PKL-001"], elsewhere, Origin(tmp_path, sha))
    hostile = Settings(root=tmp_path, action_repository="evil/x) [y](z", action_ref="v1", repository="o/r", sha=sha)
    assert "WS-PKL-001" not in rule_links(rules, ["WS-PKL-001"], hostile, Origin(tmp_path, sha))
