"""GluonTS's serialized objects: JSON whose objects name a class for its decoder to import and call.

`Predictor.deserialize(folder)` imports the class `gluonts-config.json`'s `type` names (pydoc.locate), then reads
`predictor.json` with `gluonts.core.serde.decode`, which for every object holding `__kind__` imports what its
`class` names and calls it with its `args` and `kwargs` (or returns it, for a type). GluonTS 0.14.4 called whatever
was named: `{"__kind__": "instance", "class": "os.system", "args": [...]}` anywhere in predictor.json ran the
command (checked with the real loader). 0.17 refuses classes `encode` never writes, after importing their module.
Each name is reported as a config target, at any depth and in a file of any name, for the rules to judge as they
judge a Hydra `_target_`, and as a GluonTS object of its kind, which the rules hold to what GluonTS's encoder writes
for real predictors (WS-CFG-023, rules/allow-gluonts.yaml: helpers 273 and 275 ran code through GluonTS's own
`serde.load_json`, `recipe.resolve` and `recipe.Eval`, and wrote files with classes a GluonTS module imports).

GluonTS before 0.16 took the predictor class from `type.txt`'s first line when `gluonts-config.json` is absent, and
pydoc.locate imports every module along that name before anything checks it (`TypeFileScanner`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wscan.model import Observation
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext
from wscan.scanners.config_targets import target_observations
from wscan.scanners.loader_keys import join_field

KIND = "__kind__"
CLASS = "class"
CONFIG_TYPE = "type"  # gluonts-config.json's key for the predictor class, whose deserialize is called
TYPE_FILE = "type.txt"  # GluonTS before 0.16: the predictor class, read when gluonts-config.json is absent
LINE_BYTES = 64 * 1024  # of type.txt: no class name is this long; a longer first line is reported unread
TARGET_KEY = "__kind__ class"  # the key the names are reported under
MAX_CONTAINERS = 1_000_000  # visited per file; past it, what is left is reported unread
MAX_TARGETS = 1_000  # names reported per file (a real DeepAR predictor names 20)
TICK = 4096


def serde_targets(artifact: Artifact, top: Any, ctx: ScanContext, predictor_config: bool) -> Iterator[Observation]:
    """The class names a GluonTS decoder imports from this parsed JSON document; with `predictor_config` (the file is
    gluonts-config.json, by its role), its `type` too."""
    if predictor_config and isinstance(top, dict):
        named = top.get(CONFIG_TYPE)
        if isinstance(named, str) and named:
            yield from target_observations(artifact, None, CONFIG_TYPE, CONFIG_TYPE, named)
    stack: list[tuple[str, Any]] = [("", top)] if isinstance(top, dict | list) else []
    seen = reported = 0
    while stack:
        path, container = stack.pop()
        seen += 1
        if seen % TICK == 0:
            ctx.budget.check_time()
        if seen > MAX_CONTAINERS or reported > MAX_TARGETS:
            detail = f"more than {MAX_CONTAINERS} objects or {MAX_TARGETS} class names"
            yield artifact.observe("scan.limit", limit="gluonts-serde", detail=detail)
            return
        if isinstance(container, dict) and KIND in container:
            named = container.get(CLASS)
            reported += 1
            shown = named if isinstance(named, str) and named else f"<{type(named).__name__}>"
            yield from target_observations(artifact, None, TARGET_KEY, path or "(top)", shown)
            yield artifact.observe("gluonts.object", callable=shown[:500], path=(path or "(top)")[:200],
                                   kind=str(container[KIND])[:40])  # fmt: skip
        items = container.items() if isinstance(container, dict) else enumerate(container)
        stack.extend((join_field(path, key), value) for key, value in items if isinstance(value, dict | list))


def located_name(line: str) -> str:
    """What pydoc.locate imports of `line`: its dot-separated parts (empty ones dropped, as locate drops them) up to
    the first that is no identifier, since no import reaches past it (a trailing newline only fails the last
    lookup, after the modules before it were imported)."""
    parts: list[str] = []
    for part in line.split("."):
        if not part:
            continue
        if not part.isidentifier():
            break
        parts.append(part)
    return ".".join(parts)


class TypeFileScanner:
    """GluonTS's `type.txt`: `Predictor.deserialize` (before 0.16) locates the class its first line names, importing
    each module on the way (`antigravity` opened a browser), then calls the class's `deserialize`. The name is
    judged as `gluonts-config.json`'s `type` is; a first line that names nothing importable is plain text."""

    name = "gluonts-type"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and head.name.rsplit("/", 1)[-1].lower() == TYPE_FILE  # (any case: macOS's)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[Observation]:
        with artifact.opener() as raw:
            head = raw.read(LINE_BYTES)
        end = min((at for at in (head.find(b"\n"), head.find(b"\r")) if at >= 0), default=-1)
        cut = end < 0 and artifact.size > len(head)  # the line goes on past what was read
        try:  # (a character cut at the end of what was read is dropped, not refused)
            line = (head if end < 0 else head[:end]).decode("utf-8", "ignore" if cut else "strict")
        except UnicodeDecodeError:  # the loader's readline raises before anything is imported
            line = ""
        named = located_name(line)
        if cut and named and named == ".".join(part for part in line.split(".") if part):  # a name, as far as read
            detail = f"{named[:200]}... (a first line longer than {LINE_BYTES:,} bytes)"
            yield artifact.observe("config.dynamic_target", 0, callable=detail, key=CONFIG_TYPE, path=TYPE_FILE)
            return
        if not named:
            yield artifact.observe(NOT_MINE_KIND)
        else:
            yield from target_observations(artifact, 0, CONFIG_TYPE, TYPE_FILE, named)

