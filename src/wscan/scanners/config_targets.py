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
and calls; so is jsonargparse's `class_path` (LightningCLI; vocos' `from_hparams` calls it with `init_args`,
gemelo-ai/vocos#76), judged like `_target_`. Files are taken by their `.yaml`/`.yml` name or, whatever the name,
when the head holds a `_target_:` or `class_path:` key or such a tag.
Hydra resolves a dotted name attribute by attribute (`omegaconf._utils.os.makedirs` is `os.makedirs`), so
every tail of a target's name is reported too, for the rules to judge.
"""

from __future__ import annotations

import ast
import base64
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

from wscan.model import Observation
from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.funasr_config import funasr_config
from wscan.scanners.hyperpyyaml_refs import MAX_TEXT, UNKNOWN, plain_scalar_text, reference_arithmetic
from wscan.scanners.omegaconf_resolvers import TOO_MANY_RESOLVERS, resolver_calls
from wscan.scanners.yaml_parsers import yaml_loaders

TARGET_KEY = "_target_"  # Hydra, at any depth
COMPONENT_KEY = "_component_"  # torchtune's config.instantiate, at any depth, resolved the same way
# Lightning's load_from_checkpoint before 2.6.6 imports and calls it, from the checkpoint or its hparams.yaml
INSTANTIATOR_KEY = "_instantiator"
# jsonargparse / LightningCLI, and vocos' `from_hparams` (gemelo-ai/vocos#76): `class_path` is imported and called
# with `init_args`, at any depth.
CLASS_PATH_KEY = "class_path"
# Hydra's getters return what their `path` (or first positional argument) names: that name is the target.
HYDRA_GETTERS = frozenset({"hydra.utils.get_method", "hydra.utils.get_class", "hydra.utils.get_object"})
GETTER_PATH = "_target_ path"  # the key a getter's path is reported under
GETTER_UNREAD = "_target_ path (unread)"  # a getter whose path is not a plain scalar of its mapping
# from_pretrained runs the repository's own code when asked to: reported as its own observation.
_REMOTE_CODE_KEYS = ("trust_remote_code", "custom_pipeline")
REMOTE_CODE = "remote code"
_FALSE = frozenset({"", "false", "no", "off", "0", "null", "~", "none"})
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
_REFERENCE = re.compile(r"<([^>]*)>")  # HyperPyYAML's own pattern: `<a<b>` is the key `a<b`
REF_TAG = "!ref"  # HyperPyYAML's reference: `<a.b>` walks attributes of what `a` names (getattr)
COPY_TAG = "!copy"  # a reference that deep-copies what it names
COMPUTED_REF = "!ref (computed)"  # the key under which a reference that may resolve to a tuple is reported
_MAX_SCALARS = 100_000  # values remembered per file for resolving references
_MAX_COMPUTED = 1_000  # interpolating references resolved per file; past it, the rest count as computed
_MAX_DEPTH = 16  # references through references
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
QUOTED_INTERPOLATION = "${ (quoted)"  # a double-quoted value with an interpolation: (key, line, decoded value)
_DECODES = 4  # ruamel %-decodes a tag twice; a few more rounds cost nothing
YAML_SUFFIXES = (".yaml", ".yml")
PYTHON_SUFFIXES = (".py", ".pyw")  # code that YAML cannot read is not a config (`_python_source`)
# `_target_` as a key: at a line's start (block YAML) or after `{` or `,` (JSON and YAML flow mappings, which
# OmegaConf.load reads whatever the file is called).
_TARGET_IN_HEAD = re.compile(
    rb"(?m)(?:^[ \t\-]*|[{,][ \t\r\n]*)['\"]?(?:_(?:target|component)_|class_path)['\"]?[ \t]*:"
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
# What `_walk` reports besides targets: a file with only these names no callable.
_NOT_TARGETS = frozenset({REMOTE_CODE, STRING_TAGS, INCLUDE_TAG.rstrip(":")})
_KEEP = 300
# torch.storage._load_from_bytes(b) hands b to torch.load (weights_only off): PyYAML's `!!python/object/apply` of it
# over one `!!binary` scalar is how yaml.dump writes a tensor (Lightning's hparams.yaml), and those bytes are scanned
# as a torch file of their own, as the pickle scanner does; any other use of it is judged as a call.
NESTED_LOADER = "torch.storage._load_from_bytes"
NESTED_LOAD = "!!python/object/apply (bytes read)"  # the key a read call is reported under, with its base64 text
_BINARY_TAG = "tag:yaml.org,2002:binary"
MAX_REPORTED = 1000  # distinct targets judged per file; more are counted, and that is high (WS-CFG-006)
MAX_RESOLVERS = 1000  # distinct resolver names reported per file; past it, one "(too many)"


@dataclass(slots=True)
class _Frame:
    """One open mapping or sequence: the key whose value is being read, and the step that led to it."""

    mapping: bool
    step: str  # the key (shortened) or `[]` under which this container sits in its parent; '' at the top
    key: str | None = None  # in a mapping: the key just read, None when a key comes next
    key_pending: bool = True
    target: str | None = None  # in a mapping: its `_target_`, when that is a name
    path: str | None = None  # in a mapping: its `path` scalar (a Hydra getter's argument)
    first_arg: str | None = None  # in a mapping: the first scalar of its `_args_` list
    # The argument list of `!!python/object/apply:torch.storage._load_from_bytes`: the call, reported when the list
    # ends, and what the list holds, while it is only `!!binary` scalars (else None: the call is judged unread).
    loads_bytes: tuple[str, str, str] | None = None
    payloads: list[str] | None = None


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
            data = read_capped(raw, limit)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield from _unreadable(artifact, data, f"not UTF-8 at byte {exc.start}")
            return
        try:
            found, more = _targets(text, ctx)
        except _YamlError as exc:
            if _python_source(artifact.name, text):
                yield artifact.observe(NOT_MINE_KIND)  # its doctests' YAML is not a config; the code scanner reads it
                return
            yield from _unreadable(artifact, data, str(exc))
            # HyperPyYAML reads with ruamel, which takes YAML PyYAML refuses: its calling tags are judged as text.
            found, more = _first(_tags_in_text(text))
            if not found:
                return
        if any(key in data for key in _PYANNOTE_KEYS):
            names, past = _pyannote_names(data)
            found, more = found + names, more + past
        yield from funasr_config(artifact, data)
        quoted = [(value, int(line)) for key, line, value in found if key == QUOTED_INTERPOLATION]
        found = [item for item in found if item[0] != QUOTED_INTERPOLATION]
        yield from _resolvers(artifact, text, quoted)
        for key, path, value in found:
            if key == INCLUDE_TAG.rstrip(":"):
                yield artifact.observe("config.include", file=value[:_KEEP], path=path)
                continue
            if key == NESTED_LOAD:
                yield from _nested_torch_file(artifact, path, value)
                continue
            if key == STRING_TAGS:
                yield artifact.observe("config.tags_in_string", text=value[:120], path=path)
                continue
            if key == COMPUTED_REF:
                yield artifact.observe("config.dynamic_target", callable=f"{value[:200]} (may resolve to a tuple)",
                                       key=REF_TAG, path=path)  # fmt: skip
                continue
            if key == REMOTE_CODE:
                if any(other not in _NOT_TARGETS for other, _, _ in found):
                    yield artifact.observe("config.remote_code", callable=value[:_KEEP], path=path)
                continue
            if key == GETTER_UNREAD:
                yield artifact.observe("config.dynamic_target", callable=f"{value} (its path is not a plain value)",
                                       key=TARGET_KEY, path=path)  # fmt: skip
                continue
            if key == "!applyref":  # its result is written back as YAML and read again: a tuple of tags, even
                yield artifact.observe("config.dynamic_target", callable=f"{value[:_KEEP]} (its result is re-read)",
                                       key=key, path=path)  # fmt: skip
            if key == REF_TAG:  # an attribute walk: only where it leads is judged (and a dunder on the way)
                parts = value.split(".")
                if "__" in value:
                    yield artifact.observe("config.target", callable=value[:_KEEP], leaf=parts[-1][:_KEEP], key=key,
                                           path=path)  # fmt: skip
                yield from _walk_tails(artifact, key, path, value, binds=True)
                continue
            yield from target_observations(artifact, None, key, path, value)
        if more:
            yield artifact.observe("config.more_targets", count=more)


def _nested_torch_file(artifact: Artifact, path: str, text: str) -> Iterator[ScanItem]:
    """The bytes a `!!binary` scalar hands _load_from_bytes, decoded as PyYAML decodes them, as a blob of their own
    (judged by what it holds); text PyYAML cannot decode fails the load before the call, but is judged as the call."""
    try:
        data = base64.decodebytes(text.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        yield from target_observations(artifact, None, "!!python/object/apply", path, NESTED_LOADER)
        return
    yield artifact.observe("config.nested_torch_load", callable=NESTED_LOADER, path=path, length=len(data))
    yield artifact.child(f"{path}@load_from_bytes", len(data), partial(io.BytesIO, data))


def target_observations(
    artifact: Artifact, offset: int | None, key: str, path: str, value: str
) -> Iterator[Observation]:
    """A name a loader imports and calls (or binds), for the rules to judge: the name and each tail of it, or a
    name only an interpolation decides. Also used for the Hydra targets a pickled checkpoint holds."""
    if _INTERPOLATION in value:
        yield artifact.observe("config.dynamic_target", offset, callable=value[:_KEEP], key=key, path=path)
        return
    parts = value.split(".")
    if len(parts) > _MAX_PARTS:  # its tails past the limit would go unjudged (review 23 hid torch.os.makedirs so)
        named = f"{value[:200]} (more than {_MAX_PARTS} parts)"
        yield artifact.observe("config.dynamic_target", offset, callable=named, key=key, path=path)
        return
    yield artifact.observe("config.target", offset, callable=value[:_KEEP], leaf=parts[-1][:_KEEP], key=key, path=path)
    yield from _walk_tails(artifact, key, path, value, binds=key in _BINDING_KEYS or key == GETTER_PATH, offset=offset)


def _walk_tails(
    artifact: Artifact, key: str, path: str, value: str, binds: bool, offset: int | None = None
) -> Iterator[Observation]:
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
        yield artifact.observe("config.target_walk", offset, callable=".".join(rest)[:_KEEP], target=value[:_KEEP],
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


def _resolvers(artifact: Artifact, text: str, quoted: list[tuple[str, int]]) -> Iterator[ScanItem]:
    """Each resolver the config's `${name:...}` interpolations call, once: OmegaConf calls the function the
    loading program registered under that name when it resolves the value (Hydra does so on compose and
    instantiate), and Hydra projects commonly register `eval`."""
    seen: set[str] = set()
    sources = [(text, 0), *quoted]  # the raw text; then decoded double-quoted values, at their line
    for source, at_line in sources:
        for call in resolver_calls(source):
            key = call.key
            if key in seen:
                continue
            if len(seen) >= MAX_RESOLVERS:  # fail closed: what is not listed may be anything
                yield artifact.observe("config.resolver", resolver=TOO_MANY_RESOLVERS, text="", line=0,
                                       shell_like=False, plain_default=False)  # fmt: skip
                return
            seen.add(key)
            shown = _interpolation_at(source, call.start)
            line = at_line or source.count("\n", 0, call.start) + 1
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
    scalar that is a dotted name: NeMo's model class, at the top or under `model:`), and how many more, as
    PyYAML's own parser reads the text (`yaml_parsers`: libyaml only reads large texts first)."""
    *faster, pure = yaml_loaders(text)
    for loader in faster:
        try:
            return _first(_walk(text, ctx, loader))
        except _YamlError:
            continue
    return _first(_walk(text, ctx, pure))


def _first(targets: Iterator[tuple[str, str, str]]) -> tuple[list[tuple[str, str, str]], int]:
    """The first MAX_REPORTED targets, and how many came after them (counted, not kept); double-quoted values
    with an interpolation come along outside that count (their resolvers are judged by name, once each)."""
    found: list[tuple[str, str, str]] = []
    quoted: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()  # a name met again is judged already, wherever it sits
    more = 0
    for item in targets:
        if item[0] == QUOTED_INTERPOLATION:
            if len(quoted) < MAX_RESOLVERS:
                quoted.append(item)
        elif (item[0], item[2]) in seen:
            continue
        elif len(found) < MAX_REPORTED:
            found.append(item)
            seen.add((item[0], item[2]))
        else:
            more += 1
    return found + quoted, more


def _walk(text: str, ctx: ScanContext, loader: Any, inner: bool = False) -> Iterator[tuple[str, str, str]]:
    import yaml

    anchors: dict[str, str] = {}  # anchored scalars, for a target given as an alias
    stack: list[_Frame] = []
    deferred: tuple[str, str, str] | None = None  # a call of _load_from_bytes whose argument list opens next
    values = _References()
    try:
        for count, event in enumerate(yaml.parse(text, Loader=loader)):
            if count % _TICK == 0:
                ctx.budget.check_time()
            raw_tag = getattr(event, "tag", None)  # scalars and collection starts carry one
            tag = decode_tag(str(raw_tag)) if raw_tag else None
            if tag is not None:
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
                    call = (kind, _tagged_path(stack), tagged.group("target").strip() or "(empty)")
                    if call[0] == "!!python/object/apply" and call[2] == NESTED_LOADER and not inner and isinstance(
                        event, yaml.SequenceStartEvent
                    ):
                        deferred = call  # judged when its argument list ends (`_loaded_bytes`)
                    else:
                        yield call
            payloads = stack[-1].payloads if stack else None
            if payloads is not None and not isinstance(event, yaml.SequenceEndEvent):
                # an argument of _load_from_bytes: one !!binary scalar is bytes to read, anything else is not
                if isinstance(event, yaml.ScalarEvent) and raw_tag == _BINARY_TAG and not event.anchor:
                    payloads.append(str(event.value))
                else:
                    stack[-1].payloads = None
            if isinstance(event, yaml.ScalarEvent):
                value = str(event.value)
                if event.anchor:
                    anchors[event.anchor] = value
                if not inner:
                    values.read(stack, value, tag, not event.style, _tagged_path(stack))
                # Quoted too: HyperPyYAML's first pass (ruamel) writes a quoted string back plain, and the second
                # pass resolves it as a tuple; `!tuple` makes any string one.
                if not inner and (_IMPLICIT_TUPLE.match(value) or tag == TUPLE_TAG):
                    yield from _tuple_targets(value, _tagged_path(stack), ctx)
                elif not inner and event.tag != REF_TAG and _TAGS_IN_STRING.search(decode_tag(value)):
                    yield STRING_TAGS, _tagged_path(stack), value[:_KEEP]
                if stack and not stack[-1].mapping:
                    _first_argument(stack, value)
                if not inner and event.style == '"' and "${" in value:
                    # Escapes (`\x24{`, a `$\` line continuation) can spell an interpolation the raw text hides.
                    yield QUOTED_INTERPOLATION, str(event.start_mark.line + 1 if event.start_mark else 0), value
                yield from _scalar(stack, value)
            elif isinstance(event, yaml.AliasEvent):
                if stack and not stack[-1].mapping:
                    _first_argument(stack, anchors.get(str(event.anchor), ""))
                yield from _scalar(stack, anchors.get(str(event.anchor), ""))
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append(_Frame(isinstance(event, yaml.MappingStartEvent), _step(stack)))
                if deferred is not None:
                    stack[-1].loads_bytes, stack[-1].payloads, deferred = deferred, [], None
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                where = _path(stack)
                frame = stack.pop()
                if frame.mapping:
                    yield from _mapping_done(frame, where)
                if frame.loads_bytes is not None:
                    yield _loaded_bytes(frame.loads_bytes, frame.payloads)
                _value_done(stack)
    except yaml.YAMLError as exc:
        raise _YamlError(" ".join(str(exc).split())) from None
    except RecursionError:
        raise _YamlError("nested too deeply") from None
    yield from values.computed(ctx)


def _loaded_bytes(call: tuple[str, str, str], payloads: list[str] | None) -> tuple[str, str, str]:
    """`_load_from_bytes(<!!binary>)`: its bytes, as base64 text, to be read as a torch file; any other argument
    list (more or other arguments, an alias, a nested value): the call itself, for the rules."""
    if payloads is None or len(payloads) != 1:
        return call
    return NESTED_LOAD, call[1], payloads[0]


class _References:
    """HyperPyYAML's interpolating references (`!ref (<a><b> [...], 3)`, `!ref <x>'(' + ...`): it substitutes
    each `<key>` with that value's text, resolves what that brings in, evaluates arithmetic of constants, and
    writes the result back as YAML, which it reads again; a result shaped `( ... )` is then a tuple, read with
    PyYAML's unsafe Loader. The file's scalars are remembered by their reference path, and each such reference
    is resolved here as `hyperpyyaml.core.recursive_resolve` does (see `reference_arithmetic`): a tuple is judged
    for its tags like a written one, and a result that cannot be worked out but may be a tuple is reported as
    computed."""

    def __init__(self) -> None:
        self.scalars: dict[tuple[str, ...], tuple[str, str | None]] = {}
        self.pending: list[tuple[str, str]] = []

    def read(self, stack: list[_Frame], value: str, tag: str | None, plain: bool, where: str) -> None:
        if tag in (REF_TAG, COPY_TAG) and _REFERENCE.search(value) and not _REFERENCE.fullmatch(value):
            self.pending.append((value, where))  # in a mapping or a list alike
        top = stack[-1] if stack else None
        if top is None or not top.mapping or top.key_pending or top.key is None:
            return
        if all(frame.mapping and frame.key is not None for frame in stack) and len(self.scalars) < _MAX_SCALARS:
            # A plain scalar is substituted as the value ruamel loads (`true` is `True`), a quoted one as written.
            text = plain_scalar_text(value) if plain and tag is None else value
            self.scalars[tuple(frame.key or "" for frame in stack)] = (text, tag)

    def computed(self, ctx: ScanContext) -> Iterator[tuple[str, str, str]]:
        for number, (text, where) in enumerate(self.pending):
            if number % 64 == 0:
                ctx.budget.check_time()
            result = self.resolve(text, 0) if number < _MAX_COMPUTED else UNKNOWN
            if UNKNOWN in result:
                if result[:1] in ("(", UNKNOWN) and result[-1:] in (")", UNKNOWN):
                    yield COMPUTED_REF, where, text
            elif _IMPLICIT_TUPLE.match(result):
                yield from _tuple_targets(result, f"{where} (resolved)", ctx)

    def resolve(self, text: str, depth: int) -> str:
        """recursive_resolve: a whole `<ref>` is the value it names, resolved again; otherwise each `<ref>` is
        replaced by its value's text, the result resolved again, then its arithmetic evaluated."""
        if depth > _MAX_DEPTH:
            return UNKNOWN
        if not _REFERENCE.search(text):
            return text
        whole = _REFERENCE.fullmatch(text)
        if whole is not None:
            value = self._value(whole.group(1))
            return value if value == UNKNOWN else self.resolve(value, depth + 1)
        joined = self._substituted(text)
        if UNKNOWN in joined:
            return UNKNOWN if "'" in joined or '"' in joined else joined
        return reference_arithmetic(self.resolve(joined, depth + 1))

    def _substituted(self, text: str) -> str:
        """Each `<ref>` replaced by its value's text, built piece by piece: past MAX_TEXT it is UNKNOWN (the
        loader would still build it, so a cut string could hide a tuple)."""
        pieces: list[str] = []
        size = last = 0
        for match in _REFERENCE.finditer(text):
            for piece in (text[last : match.start()], self._value(match.group(1))):
                size += len(piece)
                if size > MAX_TEXT:
                    return UNKNOWN
                pieces.append(piece)
            last = match.end()
        if size + len(text) - last > MAX_TEXT:
            return UNKNOWN
        pieces.append(text[last:])
        return "".join(pieces)

    def _value(self, name: str) -> str:
        """deref: the text of the scalar a reference names; UNKNOWN for an attribute or a non-scalar."""
        name = name.strip("<>")  # deref's own: `<<a>` and `<a<>` both name `a`
        if "." in name:
            return UNKNOWN
        found = self.scalars.get(tuple(part.strip("]") for part in name.split("[")))
        if found is None or found[1] not in (None, REF_TAG, COPY_TAG):
            return UNKNOWN
        return found[0]


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


def _pyannote_names(data: bytes) -> tuple[list[tuple[str, str, str]], int]:
    """pyannote.audio's `pipeline.name` and `preprocessors.<x>.name`, read as pyannote reads config.yaml
    (yaml.SafeLoader: the last of duplicate keys, merge keys and aliases resolved), whatever keys or anchors
    lead there. Only names with a dot: pyannote splits module and class at the last one."""
    from wscan.scanners.framework_code import load_yaml_document

    document = load_yaml_document(data)
    if not isinstance(document, dict):
        return [], 0
    found: list[tuple[str, str, str]] = []
    pipeline = document.get("pipeline")
    if isinstance(pipeline, dict) and isinstance(pipeline.get(NAME_KEY), str) and "." in pipeline[NAME_KEY]:
        found.append((NAME_KEY, "pipeline", pipeline[NAME_KEY]))
    preprocessors = document.get("preprocessors")
    if isinstance(preprocessors, dict):
        for key, entry in preprocessors.items():
            if isinstance(entry, dict) and isinstance(entry.get(NAME_KEY), str) and "." in entry[NAME_KEY]:
                found.append((NAME_KEY, f"preprocessors.{str(key)[:_STEP]}", entry[NAME_KEY]))
    return found[:MAX_REPORTED], max(0, len(found) - MAX_REPORTED)  # past them counted: a name there went unjudged


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
    if value and top.key is not None and _names_callable(top.key, value):
        yield top.key, _path(stack), value
        top.target = value
    elif top.key == "path":
        top.path = value
    elif top.key in _REMOTE_CODE_KEYS and value.strip().lower() not in _FALSE:
        # Wherever it is set (a target's mapping, a merge key's anchor, nested kwargs, a tag-built call): the loader
        # a config calls passes it on.
        yield REMOTE_CODE, _path(stack), f"{top.key}: {value}"[:_KEEP]
    _value_done(stack)


def _names_callable(key: str, value: str) -> bool:
    """Whether a key's value is a callable the loader imports: NeMo's `target` only as a dotted name, and
    jsonargparse's `class_path` only with a dot or an interpolation (a bare class name is looked up among the
    subclasses already imported, and vocos' `rsplit(".", 1)` refuses it)."""
    if key in (TARGET_KEY, COMPONENT_KEY, INSTANTIATOR_KEY):
        return True
    if key == CLASS_PATH_KEY:
        return "." in value or _INTERPOLATION in value
    return key == MODEL_TARGET_KEY and _DOTTED.match(value) is not None


def _first_argument(stack: list[_Frame], value: str) -> None:
    """The first scalar of a mapping's `_args_` list: a getter's path when given by position."""
    if len(stack) >= 2 and stack[-1].step == "_args_" and stack[-2].mapping and stack[-2].first_arg is None:
        stack[-2].first_arg = value


def _mapping_done(frame: _Frame, where: str) -> Iterator[tuple[str, str, str]]:
    """What a Hydra getter's mapping returns once it is read: the name its `path` (or first argument) gives, or,
    when that is not a plain scalar here (a merge key, an alias of a mapping), a target that cannot be read."""
    if frame.target not in HYDRA_GETTERS:
        return
    named = frame.path if frame.path is not None else frame.first_arg
    yield (GETTER_PATH, where, named) if named else (GETTER_UNREAD, where, str(frame.target))


def _value_done(stack: list[_Frame]) -> None:
    """A mapping's value is complete: a key comes next."""
    if stack and stack[-1].mapping:
        top = stack[-1]
        if top.key_pending:  # the container that just ended was a key (YAML allows that): its value comes next
            top.key, top.key_pending = None, False
        else:
            top.key, top.key_pending = None, True


def _python_source(name: str, text: str) -> bool:
    """A `.py` file that Python can parse (and YAML cannot): whatever YAML its docstrings show, no loader can read it
    as a config. `ast.parse` builds a tree and runs nothing. A file both read (`key: "value"` lines are annotated
    assignments too) stays a config: FunASR reads the file its configuration.json names with OmegaConf.load, whatever
    it is called (review 22 ran remote code from a `config.py` so)."""
    if not name.lower().endswith(PYTHON_SUFFIXES):
        return False
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
