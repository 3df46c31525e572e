"""GitHub code scanning's requirements beyond the SARIF schema, checked offline.

The official schema accepts logs that GitHub rejects or shows badly (absolute URIs it cannot map
to the repository, results without fingerprints on files with no lines, rules without a
security-severity). Sources: docs.github.com "SARIF support for code scanning" and
"SARIF results exceed limits".
"""

from __future__ import annotations

import gzip
import json
import math
from typing import Any
from urllib.parse import urlsplit

MAX_RUNS = 20
MAX_RESULTS_PER_RUN = 25_000
MAX_RULES_PER_RUN = 25_000
MAX_LOCATIONS_PER_RESULT = 1_000
MAX_TAGS_PER_RULE = 20
MAX_GZIP_BYTES = 10 * 1024 * 1024
LEVELS = {"none", "note", "warning", "error"}


def check_github_requirements(sarif: dict[str, Any]) -> list[str]:
    """Every way this log would be rejected or degraded by GitHub; empty when it is fine."""
    problems: list[str] = []
    if sarif.get("version") != "2.1.0":
        problems.append(f"version is {sarif.get('version')!r}, not '2.1.0'")
    if not isinstance(sarif.get("$schema"), str):
        problems.append("$schema is missing")
    runs = sarif.get("runs")
    if not isinstance(runs, list) or not runs:
        return [*problems, "no runs"]
    if len(runs) > MAX_RUNS:
        problems.append(f"{len(runs)} runs, GitHub accepts at most {MAX_RUNS}")
    for i, run in enumerate(runs):
        problems += [f"runs[{i}]: {p}" for p in _check_run(run)]
    size = len(gzip.compress(json.dumps(sarif).encode("utf-8")))
    if size > MAX_GZIP_BYTES:
        problems.append(f"gzipped log is {size} bytes, GitHub accepts at most {MAX_GZIP_BYTES}")
    return problems


def _check_run(run: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    driver = run.get("tool", {}).get("driver", {})
    if not isinstance(driver.get("name"), str) or not driver["name"]:
        problems.append("tool.driver.name is missing")
    rules = driver.get("rules", [])
    ids = [rule.get("id") for rule in rules]
    if len(set(ids)) != len(ids):
        problems.append("duplicate rule ids in tool.driver.rules")
    if len(rules) > MAX_RULES_PER_RUN:
        problems.append(f"{len(rules)} rules, GitHub accepts at most {MAX_RULES_PER_RUN}")
    for rule in rules:
        problems += [f"rule {rule.get('id')}: {p}" for p in _check_rule(rule)]
    results = run.get("results")
    if not isinstance(results, list):
        return [*problems, "results is missing"]
    if len(results) > MAX_RESULTS_PER_RUN:
        problems.append(f"{len(results)} results, GitHub accepts at most {MAX_RESULTS_PER_RUN}")
    base_ids = set(run.get("originalUriBaseIds", {}))
    for name, base in run.get("originalUriBaseIds", {}).items():
        if not str(base.get("uri", "")).endswith("/"):
            problems.append(f"originalUriBaseIds[{name!r}].uri must end with '/'")
    for j, result in enumerate(results):
        problems += [f"results[{j}]: {p}" for p in _check_result(result, ids, base_ids)]
    return problems


def _check_rule(rule: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if not rule.get("shortDescription", {}).get("text"):
        problems.append("shortDescription.text is missing")
    if not rule.get("help", {}).get("text") and not rule.get("help", {}).get("markdown"):
        problems.append("help is missing")
    properties = rule.get("properties", {})
    tags = properties.get("tags", [])
    if len(tags) > MAX_TAGS_PER_RULE:
        problems.append(f"{len(tags)} tags, GitHub accepts at most {MAX_TAGS_PER_RULE}")
    score = properties.get("security-severity")
    if not isinstance(score, str):
        problems.append("properties.security-severity is missing or not a string")
        return problems
    try:
        value = float(score)
    except ValueError:
        return [*problems, f"security-severity {score!r} is not a number"]
    if not math.isfinite(value) or not 0.0 <= value <= 10.0:
        problems.append(f"security-severity {score!r} is outside 0-10")
    if "security" not in tags:
        problems.append("security-severity without the 'security' tag is ignored")
    return problems


def _check_result(result: dict[str, Any], rule_ids: list[str], base_ids: set[str]) -> list[str]:
    problems: list[str] = []
    rule_id = result.get("ruleId")
    if not isinstance(rule_id, str) or rule_id not in rule_ids:
        problems.append(f"ruleId {rule_id!r} is not in tool.driver.rules")
    elif "ruleIndex" in result and rule_ids.index(rule_id) != result["ruleIndex"]:
        problems.append(f"ruleIndex {result['ruleIndex']} does not point at {rule_id}")
    if result.get("level", "warning") not in LEVELS:
        problems.append(f"level {result.get('level')!r} is not a SARIF level")
    if not result.get("message", {}).get("text"):
        problems.append("message.text is missing")
    if not result.get("partialFingerprints"):
        problems.append("partialFingerprints is missing (GitHub cannot hash lines of a binary file)")
    locations = result.get("locations") or []
    if not locations:
        return [*problems, "no locations"]
    if len(locations) > MAX_LOCATIONS_PER_RESULT:
        problems.append(f"{len(locations)} locations, GitHub accepts at most {MAX_LOCATIONS_PER_RESULT}")
    physical = locations[0].get("physicalLocation", {})
    artifact = physical.get("artifactLocation", {})
    uri = artifact.get("uri")
    if not isinstance(uri, str) or not uri:
        problems.append("locations[0] has no artifactLocation.uri")
    else:
        base = artifact.get("uriBaseId")
        if base is None and urlsplit(uri).scheme:
            problems.append(f"uri {uri!r} is absolute and has no uriBaseId")
        if base is not None and base not in base_ids:
            problems.append(f"uriBaseId {base!r} is not in run.originalUriBaseIds")
        if any(ch.isspace() for ch in uri):
            problems.append(f"uri {uri!r} is not percent-encoded")
    start_line = physical.get("region", {}).get("startLine")
    if not isinstance(start_line, int) or start_line < 1:
        problems.append("locations[0].physicalLocation.region.startLine must be >= 1")
    return problems
