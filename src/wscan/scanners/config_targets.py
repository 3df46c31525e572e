"""YAML configs that name Python callables to build: Hydra's `_target_` and NeMo's model `target`.

Loading a NeMo `.nemo` file (a tar holding `model_config.yaml` and the weights) instantiates the classes its
config names, and so does `hydra.utils.instantiate` on any Hydra config shipped with a model: a `_target_`
of `os.system` or `builtins.exec` with an argument is code execution at load time, no pickle needed
(CVE-2025-23304 in NeMo). Every `_target_` at any depth, and every `target` that is a dotted name (NeMo's model
class, at the top or under `model:`), is reported with where it sits; the rules judge the dotted name as they
judge a pickle's imports.

The YAML is read as a stream of parser events, never built into a document: aliases stay references (a
"billion laughs" config costs what its text costs) and the time budget is checked as the events go. A
target made of interpolations (`${...}`) is resolved only when the config is loaded, so it is reported as such.
Tags that name a callable count the same: HyperPyYAML's `!new:`, `!apply:`, `!name:` (SpeechBrain's
`hyperparams.yaml` calls what they name when `from_hparams` loads it) and PyYAML's `!!python/object/apply:` and
kin; so do pyannote.audio's `pipeline.name` and `preprocessors.*.name`, which `Pipeline.from_pretrained` imports
and calls. Files are taken by their `.yaml`/`.yml` name or, whatever the name, when the head holds a
`_target_:` key or such a tag.
Hydra resolves a dotted name attribute by attribute (`omegaconf._utils.os.makedirs` is `os.makedirs`), so
every tail of a target's name is reported too, for the rules to judge.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.pickle_vm import TOO_MANY_RESOLVERS, resolver_calls

TARGET_KEY = "_target_"  # Hydra, at any depth
COMPONENT_KEY = "_component_"  # torchtune's config.instantiate, at any depth, resolved the same way
# Hydra's getters return what their `path` (or first positional argument) names: that name is the target.
HYDRA_GETTERS = frozenset({"hydra.utils.get_method", "hydra.utils.get_class", "hydra.utils.get_object"})
GETTER_PATH = "_target_ path"  # the key a getter's path is reported under
# from_pretrained runs the repository's own code when asked to: reported as its own observation.
_REMOTE_CODE_KEYS = ("trust_remote_code", "custom_pipeline")
REMOTE_CODE = "remote code"
_FALSE = frozenset({"", "false", "no", "off", "0", "null", "~", "none"})
_SIBLINGS = frozenset({"path", *_REMOTE_CODE_KEYS})  # scalars of a target's mapping that say what it does
MODEL_TARGET_KEY = "target"  # NeMo's model class: a dotted name, at any depth (NeMo reads the top or `model:`)
NAME_KEY = "name"  # pyannote.audio's config.yaml: `pipeline.name` and each `preprocessors.<x>.name` are imported
_PYANNOTE_KEYS = (b"pipeline", b"preprocessors")  # a document holding either is read as pyannote reads it
# Tags that make a loader import and call what they name. HyperPyYAML (SpeechBrain's hyperparams.yaml):
# `!new:X` calls X, `!apply:X` / `!applyref:X` call X, `!name:X` binds X, `!module:X` imports X. PyYAML's
# unsafe Python tags (`!!python/object/apply:X` and its kin, which yaml.unsafe_load and FullLoader act on).
_CALLING_TAG = re.compile(
    r"(?:!(?P<hyper>new|name|apply|applyref|module):|tag:yaml\.org,2002:python/(?P<py>object/apply|object/new|object"
    r"|name|module):)(?P<target>.*)\Z",
    re.DOTALL,
)
INCLUDE_TAG = "!include:"  # HyperPyYAML reads the named file as hyperparameters too, whatever its name
_IMPLICIT_TUPLE = re.compile(r"\(.*\)\Z", re.DOTALL)  # HyperPyYAML's implicit resolver for tuples
_REFERENCE = re.compile(r"<([^<>]*)>")
REF_TAG = "!ref"  # HyperPyYAML's reference: `<a.b>` walks attributes of what `a` names (getattr)
COPY_TAG = "!copy"  # a reference that deep-copies what it names
COMPUTED_REF = "!ref (computed)"  # the key under which a reference that may resolve to a tuple is reported
_MAX_SCALARS = 100_000  # values remembered per file for resolving references
_MAX_COMPUTED = 1_000  # interpolating references resolved per file; past it, the rest count as computed
_UNKNOWN = "\ue000"  # stands for a referenced value that is not a plain scalar of the file
# Calling tags as text, for a file PyYAML cannot read: HyperPyYAML reads YAML with ruamel, which takes some of it.
_TAG_TEXT = re.compile(r"!(new|apply|applyref|name|module):([^\s\[\]{},]+)")
_CALLS_IN_TEXT = re.compile(
    rb"!(?:new|apply|applyref|name|module|include):|(?m:^%TAG)|!<|!!python/|tag:yaml\.org,2002:python/"
)
# Calling tags as text inside a string value: a loader that reads the string as YAML again (HyperPyYAML overrides,
# speechbrain's hpopt arguments) runs them.
_TAGS_IN_STRING = re.compile(r"!(?:new|apply|applyref|name|module|include|tuple):|!!python/|tag:yaml\.org,2002:python/")
TUPLE_TAG = "!tuple"  # HyperPyYAML drops the first and last characters and reads the rest with PyYAML's unsafe Loader
STRING_TAGS = "!string"  # the key under which a string holding calling tags is reported
_DECODES = 4  # ruamel %-decodes a tag twice; a few more rounds cost nothing
YAML_SUFFIXES = (".yaml", ".yml")
# `_target_` as a key: at a line's start (block YAML) or after `{` or `,` (JSON and YAML flow mappings, which
# OmegaConf.load reads whatever the file is called).
_TARGET_IN_HEAD = re.compile(
    rb"(?m)(?:^[ \t\-]*|[{,][ \t\r\n]*)['\"]?_(?:target|component)_['\"]?[ \t]*:"
    rb"|!(?:new|apply|applyref|name|module):[A-Za-z_]|!!python/|tag:yaml\.org,2002:python/"
)
_INTERPOLATION = "${"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+\Z")  # what NeMo's `target` must be to name a class
_TICK = 4096  # events between time checks
_STEP = 60  # characters of a key kept for a path
_SHOWN_STEPS = 8
_MAX_PARTS = 64  # dotted parts of a target whose tails are judged
# Tags and keys whose loader binds the object it names rather than calling it: a module is a value there.
_BINDING_KEYS = frozenset({"!name", "!module", "!!python/name", "!!python/module", REF_TAG})
_KEEP = 300
MAX_REPORTED = 1000  # target observations per file; more are counted
MAX_RESOLVERS = 1000  # distinct resolver names reported per file; past it, one "(too many)"


@dataclass(slots=True)
class _Frame:
    """One open mapping or sequence: the key whose value is being read, and the step that led to it."""

    mapping: bool
    step: str  # the key (shortened) or `[]` under which this container sits in its parent; '' at the top
    key: str | None = None  # in a mapping: the key just read, None when a key comes next
    key_pending: bool = True
    target: str | None = None  # in a mapping: its `_target_`, when that is a name
    siblings: dict[str, str] | None = None  # in a mapping: scalars under _SIBLINGS, and the first of `_args_`


class ConfigTargetScanner:
    """YAML configs, for the callables Hydra or NeMo would build from them."""

    name = "config-targets"

    def accepts(self, head: Head) -> bool:
        if head.raw_data or b"\x00" in head.head:
            return False
        if head.name.lower().endswith(YAML_SUFFIXES):
            return True
        return _names_targets(head.head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        limit = ctx.limits.max_json_bytes
        if artifact.size > limit:
            yield artifact.observe("config.size_limit", size=artifact.size, limit=limit)
            return
        with artifact.opener() as raw:
            data = raw.read(limit + 1)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield from _unreadable(artifact, data, f"not UTF-8 at byte {exc.start}")
            return
        try:
            found, more = _targets(text, ctx)
        except _YamlError as exc:
            yield from _unreadable(artifact, data, str(exc))
            # HyperPyYAML reads with ruamel, which takes YAML PyYAML refuses: its calling tags are judged as text.
            found, more = _first(_tags_in_text(text))
            if not found:
                return
        if any(key in data for key in _PYANNOTE_KEYS):
            found += _pyannote_names(data)
        yield from _resolvers(artifact, text)
        for key, path, value in found:
            if key == INCLUDE_TAG.rstrip(":"):
                yield artifact.observe("config.include", file=value[:_KEEP], path=path)
                continue
            if key == STRING_TAGS:
                yield artifact.observe("config.tags_in_string", text=value[:120], path=path)
                continue
            if key == COMPUTED_REF:
                yield artifact.observe("config.dynamic_target", callable=f"{value[:200]} (may resolve to a tuple)",
                                       key=REF_TAG, path=path)  # fmt: skip
                continue
            if key == REMOTE_CODE:
                yield artifact.observe("config.remote_code", callable=value[:_KEEP], path=path)
                continue
            if key == REF_TAG:  # an attribute walk: only where it leads is judged (and a dunder on the way)
                parts = value.split(".")
                if "__" in value:
                    yield artifact.observe("config.target", callable=value[:_KEEP], leaf=parts[-1][:_KEEP], key=key,
                                           path=path)  # fmt: skip
                yield from _walk_tails(artifact, key, path, value, binds=True)
                continue
            if _INTERPOLATION in value:
                yield artifact.observe("config.dynamic_target", callable=value[:_KEEP], key=key, path=path)
                continue
            parts = value.split(".")
            yield artifact.observe("config.target", callable=value[:_KEEP], leaf=parts[-1][:_KEEP], key=key, path=path)
            yield from _walk_tails(artifact, key, path, value, binds=key in _BINDING_KEYS or key == GETTER_PATH)
        if more:
            yield artifact.observe("config.more_targets", count=more)


def _walk_tails(artifact: Artifact, key: str, path: str, value: str, binds: bool) -> Iterator[ScanItem]:
    """Each tail of a dotted name, for the rules to judge: Hydra, pydoc.locate and `!ref` resolve a name
    attribute by attribute, so `omegaconf._utils.os.system` is os.system when `_utils` imports os.

    `through` is the module the walk would pass through and `member` the attribute it takes from it, which the
    rules check against that module's real members (a NeMo `nemo.lightning.io.pl` cannot be the standard `io`).
    A one-part tail is a module itself: only judged where the loader binds the object (`!name:`, `!ref`,
    `!!python/name:`), since a called module raises TypeError before anything runs."""
    parts = value.split(".")
    for start in range(1, min(len(parts), _MAX_PARTS)):
        rest = parts[start:]
        if len(rest) == 1 and not binds:
            continue
        yield artifact.observe("config.target_walk", callable=".".join(rest)[:_KEEP], target=value[:_KEEP],
                               key=key, path=path, through=rest[0][:_KEEP],
                               member=".".join(rest[:2])[:_KEEP])  # fmt: skip


def _decoded(data: bytes) -> Iterator[bytes]:
    """The text, then each round of %-decoding while it changes: YAML decodes a tag's %-escapes, and ruamel
    (HyperPyYAML's reader) does so twice, so `!%2561pply:` is `!apply:` to it."""
    yield data
    for _ in range(_DECODES):
        if b"%" not in data or (decoded := unquote_to_bytes(data)) == data:
            return
        data = decoded
        yield data


def decode_tag(tag: str) -> str:
    """A tag as the loader that decodes most sees it (see `_decoded`)."""
    for _ in range(_DECODES):
        if "%" not in tag or (decoded := unquote(tag)) == tag:
            break
        tag = decoded
    return tag


def _names_targets(data: bytes) -> bool:
    """A `_target_` key or a calling tag, also with the tag's letters %-escaped (YAML decodes tag URIs)."""
    return any(_TARGET_IN_HEAD.search(text) is not None for text in _decoded(data))


def _resolvers(artifact: Artifact, text: str) -> Iterator[ScanItem]:
    """Each resolver the config's `${name:...}` interpolations call, once: OmegaConf calls the function the
    loading program registered under that name when it resolves the value (Hydra does so on compose and
    instantiate), and Hydra projects commonly register `eval`."""
    seen: set[str] = set()
    for call in resolver_calls(text):
        key = call.key
        if key in seen:
            continue
        if len(seen) >= MAX_RESOLVERS:  # fail closed: what is not listed may be anything
            yield artifact.observe("config.resolver", resolver=TOO_MANY_RESOLVERS, text="", line=0, shell_like=False,
                                   plain_default=False)  # fmt: skip
            return
        seen.add(key)
        shown = _interpolation_at(text, call.start)
        line = text.count("\n", 0, call.start) + 1
        yield artifact.observe("config.resolver", resolver=call.name, text=shown, line=line,
                               shell_like=call.shell_like, plain_default=call.plain_default)  # fmt: skip


def _interpolation_at(text: str, start: int) -> str:
    """The `${...}` starting at `start`, to its closing brace (or the line's end), at most 120 characters."""
    depth = 0
    for at in range(start, min(start + 120, len(text))):
        char = text[at]
        if char == "\n":
            return text[start:at]
        depth += (char == "{") - (char == "}")
        if depth == 0 and char == "}":
            return text[start : at + 1]
    return text[start : start + 120]


class _YamlError(Exception):
    """The text is not YAML that PyYAML (which Hydra and OmegaConf use) reads."""


def _unreadable(artifact: Artifact, data: bytes, reason: str) -> Iterator[ScanItem]:
    """A config that cannot be read is only a finding when it is named as YAML and looks like it names
    targets: other YAML files that do not parse are not configs anything instantiates, and a README or a
    Python file that shows a `_target_:` line is not YAML at all."""
    if artifact.name.lower().endswith(YAML_SUFFIXES) and _TARGET_IN_HEAD.search(data) is not None:
        yield artifact.observe("config.malformed", reason=reason[:_KEEP])
    if any(_CALLS_IN_TEXT.search(text) is not None for text in _decoded(data)):
        # HyperPyYAML reads with ruamel, which takes YAML that PyYAML refuses, and %TAG can spell any tag: a file
        # with calling tags that cannot be read here is judged unread, not passed.
        yield artifact.observe("config.unreadable_calls", reason=reason[:_KEEP])


def _targets(text: str, ctx: ScanContext) -> tuple[list[tuple[str, str, str]], int]:
    """(key, path, value) of the first MAX_REPORTED targets (every `_target_` scalar, and every `target`
    scalar that is a dotted name: NeMo's model class, at the top or under `model:`), and how many more.
    libyaml reads faster; what it refuses is read again with PyYAML's own parser, which OmegaConf uses."""
    import yaml

    try:
        return _first(_walk(text, ctx, getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except _YamlError:
        return _first(_walk(text, ctx, yaml.SafeLoader))


def _first(targets: Iterator[tuple[str, str, str]]) -> tuple[list[tuple[str, str, str]], int]:
    """The first MAX_REPORTED targets, and how many came after them (counted, not kept)."""
    found = list(itertools.islice(targets, MAX_REPORTED))
    return found, sum(1 for _ in targets)


def _walk(text: str, ctx: ScanContext, loader: Any, inner: bool = False) -> Iterator[tuple[str, str, str]]:
    import yaml

    anchors: dict[str, str] = {}  # anchored scalars, for a target given as an alias
    stack: list[_Frame] = []
    values = _References()
    try:
        for count, event in enumerate(yaml.parse(text, Loader=loader)):
            if count % _TICK == 0:
                ctx.budget.check_time()
            if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)) and event.tag:
                tag = decode_tag(str(event.tag))
                if tag == REF_TAG and isinstance(event, yaml.ScalarEvent):
                    # Only inside `<...>`: `<a.b>` walks attributes of what `a` holds (a module reaches anything);
                    # the text around is joined as a string (`<save_folder>/hparams.yaml`).
                    for reference in _REFERENCE.findall(str(event.value)):
                        if "." in reference:
                            yield REF_TAG, _tagged_path(stack), reference.strip()
                if tag.startswith(INCLUDE_TAG) and not tag[len(INCLUDE_TAG) :].lower().endswith(YAML_SUFFIXES):
                    yield INCLUDE_TAG.rstrip(":"), _tagged_path(stack), tag[len(INCLUDE_TAG) :] or "(empty)"
                tagged = _CALLING_TAG.match(tag)
                if tagged is not None:
                    kind = f"!{tagged.group('hyper')}" if tagged.group("hyper") else f"!!python/{tagged.group('py')}"
                    yield kind, _tagged_path(stack), tagged.group("target").strip() or "(empty)"
            if isinstance(event, yaml.ScalarEvent):
                value = str(event.value)
                if event.anchor:
                    anchors[event.anchor] = value
                if not inner:
                    values.read(stack, value, decode_tag(event.tag) if event.tag else None, _tagged_path(stack))
                # Quoted too: HyperPyYAML's first pass (ruamel) writes a quoted string back plain, and the second
                # pass resolves it as a tuple; `!tuple` makes any string one.
                if not inner and (_IMPLICIT_TUPLE.match(value) or (event.tag and decode_tag(event.tag) == TUPLE_TAG)):
                    yield from _tuple_targets(value, _tagged_path(stack), ctx)
                elif not inner and event.tag != REF_TAG and _TAGS_IN_STRING.search(decode_tag(value)):
                    yield STRING_TAGS, _tagged_path(stack), value[:_KEEP]
                if stack and not stack[-1].mapping:
                    _first_argument(stack, value)
                yield from _scalar(stack, value)
            elif isinstance(event, yaml.AliasEvent):
                yield from _scalar(stack, anchors.get(str(event.anchor), ""))
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append(_Frame(isinstance(event, yaml.MappingStartEvent), _step(stack)))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                where = _path(stack)
                frame = stack.pop()
                if frame.mapping:
                    yield from _mapping_done(frame, where)
                _value_done(stack)
    except yaml.YAMLError as exc:
        raise _YamlError(" ".join(str(exc).split())) from None
    except RecursionError:
        raise _YamlError("nested too deeply") from None
    yield from values.computed(ctx)


class _References:
    """HyperPyYAML's interpolating references (`!ref (<a><b> [...], 3)`, `!ref <x>'(' + ...`): it substitutes
    each `<key>` with that value's text, evaluates `+`-style arithmetic of constants, and writes the result back
    as YAML, which it reads again; a result shaped `( ... )` is then a tuple, read with PyYAML's unsafe Loader.
    The file's plain scalars are remembered by their reference path, and each such reference is resolved here
    the same way, without evaluating anything: a tuple is judged for its tags like a written one, and a result
    that cannot be worked out (string arithmetic, a value that is not a plain scalar) but may be a tuple is
    reported as computed."""

    def __init__(self) -> None:
        self.scalars: dict[tuple[str, ...], tuple[str, str | None]] = {}
        self.pending: list[tuple[str, str]] = []

    def read(self, stack: list[_Frame], value: str, tag: str | None, where: str) -> None:
        top = stack[-1] if stack else None
        if top is None or not top.mapping or top.key_pending or top.key is None:
            return
        if tag in (REF_TAG, COPY_TAG) and _REFERENCE.search(value) and not _WHOLE_REFERENCE.fullmatch(value):
            self.pending.append((value, where))
        if all(frame.mapping and frame.key is not None for frame in stack) and len(self.scalars) < _MAX_SCALARS:
            path = tuple(frame.key or "" for frame in stack)
            self.scalars[path] = (value, tag)

    def computed(self, ctx: ScanContext) -> Iterator[tuple[str, str, str]]:
        for number, (text, where) in enumerate(self.pending):
            if number % 64 == 0:
                ctx.budget.check_time()
            result = self._resolve(text, 0) if number < _MAX_COMPUTED else _UNKNOWN
            if _UNKNOWN in result:
                if result[:1] in ("(", _UNKNOWN) and result[-1:] in (")", _UNKNOWN):
                    yield COMPUTED_REF, where, text
            elif _IMPLICIT_TUPLE.match(result):
                yield from _tuple_targets(result, f"{where} (resolved)", ctx)

    def _resolve(self, text: str, depth: int) -> str:
        if depth > 16:
            return _UNKNOWN
        whole = _WHOLE_REFERENCE.fullmatch(text)
        if whole is not None:
            return self._value(whole.group(1), depth)
        joined = _REFERENCE.sub(lambda m: self._value(m.group(1), depth), text)[:65536]
        if _UNKNOWN in joined:
            return _UNKNOWN if "'" in joined or '"' in joined else joined
        summed = _string_sum(joined)
        return joined if summed is None else summed

    def _value(self, name: str, depth: int) -> str:
        if "." in name:  # an attribute of an object: not a plain value
            return _UNKNOWN
        found = self.scalars.get(tuple(part.strip("]") for part in name.split("[")))
        if found is None:
            return _UNKNOWN
        value, tag = found
        if tag in (REF_TAG, COPY_TAG):
            return self._resolve(value, depth + 1)
        return value if tag is None else _UNKNOWN


_WHOLE_REFERENCE = re.compile(r"<([^>]*)>")
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod)


def _string_sum(text: str) -> str | None:
    """What HyperPyYAML's arithmetic makes of `text` when that is a string: the joined constants of a sum of
    string literals, `_UNKNOWN` when other arithmetic on strings is involved (`'%c' % 33` is `!`), None when the
    result is not a string (numbers, or not arithmetic at all: the text stays as it is)."""
    if "'" not in text and '"' not in text:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parts: list[str] = []
    stack: list[ast.AST] = [tree]
    exact = True
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            if isinstance(node.value, str):
                parts.append(node.value)
            else:
                exact = False
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
            exact = exact and isinstance(node.op, ast.Add)
            stack += [node.right, node.left]
        else:
            return None  # _ast_eval raises, and the text is kept as written
    if not parts:
        return None
    return "".join(parts) if exact else _UNKNOWN


def _step(stack: list[_Frame]) -> str:
    """How a container about to open is reached from its parent: the key it is the value of, or `[]`."""
    if not stack:
        return ""
    top = stack[-1]
    if not top.mapping:
        return "[]"
    return (top.key or "")[:_STEP] if not top.key_pending else ""


def _path(stack: list[_Frame]) -> str:
    """Where the innermost container sits, for a report: the first and last steps of a deep one."""
    steps = [frame.step for frame in stack if frame.step]
    if len(steps) > 2 * _SHOWN_STEPS:
        steps = [*steps[:_SHOWN_STEPS], "...", *steps[-_SHOWN_STEPS:]]
    return ".".join(steps)[:_KEEP] or "(top)"


def _tuple_targets(value: str, where: str, ctx: ScanContext) -> Iterator[tuple[str, str, str]]:
    """HyperPyYAML reads a plain `( ... )` as a tuple by loading `[ ... ]` with PyYAML's unsafe Loader, which
    acts on `!!python/object/apply:` and kin: the tags inside are judged as the file's own."""
    import yaml

    try:
        for key, _, target in list(_walk(f"[{value[1:-1]}]", ctx, yaml.SafeLoader, inner=True)):
            yield key, f"{where} (tuple)"[:_KEEP], target
    except _YamlError:
        return  # the loader cannot read it either


def _tags_in_text(text: str) -> Iterator[tuple[str, str, str]]:
    """Calling tags found as text (tag URIs %-decoded, as YAML decodes them)."""
    for match in _TAG_TEXT.finditer(decode_tag(text)):
        yield f"!{match.group(1)}", "(unparsed)", match.group(2)


def _pyannote_names(data: bytes) -> list[tuple[str, str, str]]:
    """pyannote.audio's `pipeline.name` and `preprocessors.<x>.name`, read as pyannote reads config.yaml
    (yaml.SafeLoader: the last of duplicate keys, merge keys and aliases resolved), whatever keys or anchors
    lead there. Only names with a dot: pyannote splits module and class at the last one."""
    from wscan.scanners.framework_code import load_yaml_document

    document = load_yaml_document(data)
    if not isinstance(document, dict):
        return []
    found: list[tuple[str, str, str]] = []
    pipeline = document.get("pipeline")
    if isinstance(pipeline, dict) and isinstance(pipeline.get(NAME_KEY), str) and "." in pipeline[NAME_KEY]:
        found.append((NAME_KEY, "pipeline", pipeline[NAME_KEY]))
    preprocessors = document.get("preprocessors")
    if isinstance(preprocessors, dict):
        for key, entry in list(preprocessors.items())[:MAX_REPORTED]:
            if isinstance(entry, dict) and isinstance(entry.get(NAME_KEY), str) and "." in entry[NAME_KEY]:
                found.append((NAME_KEY, f"preprocessors.{str(key)[:_STEP]}", entry[NAME_KEY]))
    return found


def _tagged_path(stack: list[_Frame]) -> str:
    """Where a tagged node sits: its container's path, and its key when it is a mapping's value."""
    where = _path(stack)
    top = stack[-1] if stack else None
    if top is None or not top.mapping or top.key_pending or not top.key:
        return where
    key = top.key[:_STEP]
    return key if where == "(top)" else f"{where}.{key}"[:_KEEP]


def _scalar(stack: list[_Frame], value: str) -> Iterator[tuple[str, str, str]]:
    if not stack or not stack[-1].mapping:
        return
    top = stack[-1]
    if top.key_pending:
        top.key, top.key_pending = value, False
        return
    if value and (top.key in (TARGET_KEY, COMPONENT_KEY) or (top.key == MODEL_TARGET_KEY and _DOTTED.match(value))):
        yield top.key, _path(stack), value
        top.target = value
    elif top.key in _SIBLINGS:
        top.siblings = {**(top.siblings or {}), top.key: value}
    _value_done(stack)


def _first_argument(stack: list[_Frame], value: str) -> None:
    """The first scalar of a mapping's `_args_` list: a getter's path when given by position."""
    if len(stack) >= 2 and stack[-1].step == "_args_" and stack[-2].mapping:
        parent = stack[-2]
        if parent.siblings is None or "_args_" not in parent.siblings:
            parent.siblings = {**(parent.siblings or {}), "_args_": value}


def _mapping_done(frame: _Frame, where: str) -> Iterator[tuple[str, str, str]]:
    """What a target's mapping adds once it is read: the name a Hydra getter returns, and a from_pretrained
    that is told to run the repository's code."""
    if frame.target is None or frame.siblings is None:
        return
    if frame.target in HYDRA_GETTERS:
        named = frame.siblings.get("path", frame.siblings.get("_args_"))
        if named:
            yield GETTER_PATH, where, named
    if any(frame.siblings.get(k, "false").strip().lower() not in _FALSE for k in _REMOTE_CODE_KEYS):
        yield REMOTE_CODE, where, frame.target


def _value_done(stack: list[_Frame]) -> None:
    """A mapping's value is complete: a key comes next."""
    if stack and stack[-1].mapping:
        top = stack[-1]
        if top.key_pending:  # the container that just ended was a key (YAML allows that): its value comes next
            top.key, top.key_pending = None, False
        else:
            top.key, top.key_pending = None, True
