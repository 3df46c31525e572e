"""SentencePiece models (`tokenizer.model`, `spiece.model`, `sentencepiece.bpe.model`): the protobuf `ModelProto` that
Llama, T5, Gemma, Mistral and XLM-R tokenizers load with the sentencepiece C++ library.

Why: these files sit in a large share of model repositories, and an unread file is a finding. Loading one runs no
code, so what can go wrong is what the C++ loader trusts: it refuses some inconsistent models (no pieces, an empty
or repeated piece, no unknown piece, byte pieces without byte fallback), and it reads the normalization rules
(`precompiled_charsmap`, a double-array trie followed by the replacement strings) with offsets taken from the file.
The message is parsed with `protobuf` from a descriptor declared here (no sentencepiece import), reading only the
fields checked; strings are read as bytes, as the C++ loader keeps them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from wscan.scanners.base import NOT_MINE_KIND, Artifact, Head, ScanContext, ScanItem, read_capped
from wscan.scanners.onnx_model import read_varint

_PACKAGE = "wscan.sentencepiece"
_B, _M, _I, _F, _BOOL = "bytes", "message", "int32", "float", "bool"
# (message, [(field name, number, type, repeated, message type name)]), proto2 as sentencepiece_model.proto. Enums
# are read as int32, as the C++ parser cuts them, so a value the enum lacks is seen (the loader's proto2 parser sets
# the field's default instead, which `_effective` mirrors).
_MESSAGES: list[tuple[str, list[tuple[str, int, str, bool, str]]]] = [
    ("ModelProto", [("pieces", 1, _M, True, "SentencePiece"), ("trainer_spec", 2, _M, False, "TrainerSpec"),
                    ("normalizer_spec", 3, _M, False, "NormalizerSpec"),
                    ("self_test_data", 4, _M, False, "SelfTestData"),
                    ("denormalizer_spec", 5, _M, False, "NormalizerSpec")]),
    ("SelfTestData", [("samples", 1, _M, True, "Sample")]),
    ("Sample", [("input", 1, _B, False, "")]),
    ("SentencePiece", [("piece", 1, _B, False, ""), ("score", 2, _F, False, ""), ("type", 3, _I, False, "")]),
    ("TrainerSpec", [("model_type", 3, _I, False, ""), ("byte_fallback", 35, _BOOL, False, ""),
                     ("unk_surface", 44, _B, False, "")]),
    ("NormalizerSpec", [("name", 1, _B, False, ""), ("precompiled_charsmap", 2, _B, False, "")]),
]  # fmt: skip
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PIECE_TYPES = frozenset({NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE})
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
_CLASSES: dict[str, Any] = {}
_HEX_UPPER = frozenset(b"0123456789ABCDEF")


def _message_class(name: str) -> Any:
    """A protobuf message class for one of the types above, built once in a private descriptor pool."""
    if not _CLASSES:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        field = descriptor_pb2.FieldDescriptorProto
        proto = descriptor_pb2.FileDescriptorProto(name="wscan_sentencepiece.proto", package=_PACKAGE, syntax="proto2")
        kinds = {_B: field.TYPE_BYTES, _I: field.TYPE_INT32, _M: field.TYPE_MESSAGE, _F: field.TYPE_FLOAT,
                 _BOOL: field.TYPE_BOOL}  # fmt: skip
        for message, fields in _MESSAGES:
            described = proto.message_type.add(name=message)
            for field_name, number, kind, repeated, type_name in fields:
                label = field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL
                added = described.field.add(name=field_name, number=number, type=kinds[kind], label=label)
                if type_name:
                    added.type_name = f".{_PACKAGE}.{type_name}"
        pool = descriptor_pool.DescriptorPool()
        pool.Add(proto)
        for message, _ in _MESSAGES:
            _CLASSES[message] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{message}"))
    return _CLASSES[name]


def looks_like_sentencepiece(head: bytes) -> bool:
    """A ModelProto as every writer lays it out: its first field a piece (field 1), whose first field is the piece's
    text (field 1), followed inside the piece by its score (field 2, a float) or type (field 3)."""
    if head[:1] != b"\x0a":
        return False
    outer = read_varint(head, 1)
    if outer is None or outer[0] < 2 or head[outer[1] : outer[1] + 1] != b"\x0a":
        return False
    length, start = outer
    inner = read_varint(head, start + 1)
    if inner is None or inner[0] == 0 or inner[1] + inner[0] > start + length:
        return False
    after = inner[1] + inner[0]
    return after == start + length or head[after : after + 1] in (b"\x15", b"\x18")


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: str  # the observation kind
    reason: str


def _effective(value: int, known: frozenset[int] | dict[int, str], default: int) -> int:
    """What the loader's proto2 parser makes of an enum field: a value the enum lacks is set aside, the default read."""
    return value if value in known else default


MAX_PIECE_BYTES = 8000  # sentencepiece 0.2.3 refuses longer; 0.2.0 and 0.2.1 overflow their stack on ~58,000
# Pieces each a prefix of the next (a, aa, aaa, ...): every one is a match to try at each position of the text.
# Helper 215: 70 user-defined ones crashed 0.2.0 and 0.2.1 (SIGSEGV) encoding 2,000 characters, 255 normal ones made
# sampling 3,000 characters take 11 s. Real vocabularies chain a few dozen at most (runs of spaces in code models).
COSTLY_PREFIX_CHAIN = 48
COSTLY_SELF_TESTS = 1000  # samples 0.2.0 and 0.2.1 encode while loading (0.2.3 ignores them)
COSTLY_REPLACEMENT = 4096  # bytes of one normalization replacement (NFKC's longest is 33; custom rules go to hundreds)
COSTLY_MEAN_REPLACEMENT = 128  # ... or of the average over a large trie's leaves (NFKC's is a few bytes)
COSTLY_UNK_SURFACE = 1024  # bytes every unknown piece decodes to (" \u2047 " by default)


def check_model(model: Any) -> list[Refusal]:
    """What the loader refuses (`ModelInterface::InitializePieces`, `ModelFactory::Create`, 0.2.3's added checks),
    what in the normalization rules it would read out of bounds, and what makes tokenizing cost far more than the
    text (helper 214's audit of sentencepiece 0.2.0, 0.2.1 and 0.2.3)."""
    refused = "sentencepiece.refused"
    found: list[Refusal] = []
    trainer = model.trainer_spec
    model_type = _effective(trainer.model_type, MODEL_TYPES, 1)  # unset or unknown: the loader reads unigram
    if not model.pieces:
        found.append(Refusal(refused, "no pieces"))
    normal: set[bytes] = set()
    reserved: set[bytes] = set()
    unknown = 0
    bytes_found: set[int] = set()
    for index, piece in enumerate(model.pieces):
        kind = _effective(piece.type, PIECE_TYPES, NORMAL)  # unset (0) or unknown: a normal piece
        text = piece.piece
        if not text or b"\0" in text or len(text) >= MAX_PIECE_BYTES:
            what = "empty" if not text else "holds a NUL" if b"\0" in text else f"{len(text):,} bytes long"
            found.append(Refusal(refused, f"piece {index} is {what}"))
            break
        if model_type == 1 and not math.isfinite(piece.score):
            found.append(Refusal(refused, f"piece {index} ({_shown(text)}) scores {piece.score}"))
            break
        seen = normal if kind in (NORMAL, USER_DEFINED, UNUSED) else reserved
        if text in normal or text in reserved if model_type == 2 else text in seen:  # BPE: one map for both
            found.append(Refusal(refused, f"piece {index} ({_shown(text)}) is defined twice"))
            break
        seen.add(text)
        if kind == UNKNOWN:
            unknown += 1
        if kind == BYTE:
            value = _byte_piece(text)
            if not trainer.byte_fallback:
                found.append(Refusal(refused, f"byte piece {_shown(text)} without byte_fallback"))
                break
            if value is None:
                found.append(Refusal(refused, f"byte piece {_shown(text)} is not <0xNN>"))
                break
            bytes_found.add(value)
    else:
        if model.pieces and unknown != 1:
            found.append(Refusal(refused, "no unknown piece" if not unknown else "two unknown pieces"))
        elif model.pieces and trainer.byte_fallback and len(bytes_found) != 256:
            found.append(Refusal(refused, f"byte_fallback with {len(bytes_found)} of 256 byte pieces"))
        elif model.pieces and model_type == 1 and not normal:
            found.append(Refusal(refused, "a unigram model with no piece to tokenize into"))
    # Matched by prefix: user-defined pieces in every model, and a unigram model's lattice takes every normal piece
    # that starts at a position (a word model looks whole words up, BPE merges pairs).
    matched = (NORMAL, USER_DEFINED) if model_type == 1 else (USER_DEFINED,)
    chain = prefix_chain(p.piece for p in model.pieces if _effective(p.type, PIECE_TYPES, NORMAL) in matched)
    if chain > COSTLY_PREFIX_CHAIN:
        found.append(Refusal("sentencepiece.costly", f"{chain} pieces each a prefix of the next: every one is a match "
                                                     "to try at each position of the text"))
    if len(trainer.unk_surface) > COSTLY_UNK_SURFACE:
        found.append(Refusal("sentencepiece.costly", f"an unk_surface of {len(trainer.unk_surface):,} bytes, which "
                                                     "every unknown piece decodes to"))
    samples = len(model.self_test_data.samples)
    if samples > COSTLY_SELF_TESTS:
        found.append(Refusal("sentencepiece.costly", f"{samples:,} self-test samples, encoded at every load by "
                                                     "sentencepiece before 0.2.3 (one that fails refuses the model)"))
    for spec_name in ("normalizer_spec", "denormalizer_spec"):
        spec = getattr(model, spec_name)
        blob = spec.precompiled_charsmap
        reason, values = read_charsmap(blob)
        if reason:
            found.append(Refusal("sentencepiece.bad_charsmap", f"{spec_name}: {reason}"))
        elif values is not None:
            reason = _replacement_cost(values, blob)
            if reason:
                found.append(Refusal("sentencepiece.costly", f"{spec_name}: {reason}"))
    return found


def prefix_chain(pieces: Iterable[bytes]) -> int:
    """The most pieces that are each a prefix of the next: in sorted order a piece's prefixes come before it, so a
    stack holds the chain of the current piece (each piece pushed and popped once)."""
    stack: list[bytes] = []
    deepest = 0
    for text in sorted(set(pieces)):
        while stack and not text.startswith(stack[-1]):
            stack.pop()
        stack.append(text)
        deepest = max(deepest, len(stack))
    return deepest


def _replacement_cost(values: Any, blob: bytes) -> str:
    """What normalizing costs per character, from the lengths of the strings a sound trie's leaves point at
    (`values`, from `read_charsmap`): one huge replacement, or most of a large trie's characters made long."""
    if not values.size:
        return ""
    import numpy as np

    (trie_size,) = struct.unpack("<I", blob[:4])
    nuls = np.flatnonzero(np.equal(np.frombuffer(blob, dtype=np.uint8, offset=4 + trie_size), 0))
    lengths = nuls[np.searchsorted(nuls, values)] - values
    longest, mean = int(lengths.max()), float(lengths.mean())
    if longest > COSTLY_REPLACEMENT:
        return f"a replacement of {longest:,} bytes for a character (normalizing multiplies the text by it)"
    if values.size > 1000 and mean > COSTLY_MEAN_REPLACEMENT:
        return f"{values.size:,} characters replaced by {mean:.0f} bytes on average (normalizing multiplies the text)"
    return ""


def _byte_piece(text: bytes) -> int | None:
    """`PieceToByte`: `<0x` two upper-case hex digits `>` (the loader refuses `<0x0a>`)."""
    digits = text[3:5]
    if len(text) == 6 and text.startswith(b"<0x") and text.endswith(b">") and set(digits) <= _HEX_UPPER:
        return int(digits.decode("ascii"), 16)
    return None


def read_charsmap(blob: bytes) -> tuple[str, Any]:
    """Why the normalizer would refuse the blob or read outside it, or ("", the string position of every leaf) for a
    sound one (("", None) for an empty blob: no rules).

    The blob is a little-endian uint32 size, a darts-clone double-array trie of that many bytes, then NUL-ended
    replacement strings. Normalizing walks the trie from unit 0 with each input byte (`commonPrefixSearch`): a
    unit's children lie at its offset XOR the byte, any of 256, and a unit marked as having a leaf keeps, at its
    offset, the position of a replacement string. sentencepiece before 0.2.1 read all of these as stored (its own
    test corrupts unit 0 to read out of bounds); later versions refuse such a trie. So every unit is checked, not
    only the reachable ones (a real trie's unused units point inside it too): each one's children, whatever the
    input, inside the trie; each leaf's string inside the strings and ended by a NUL.
    """
    if not blob:
        return "", None
    if len(blob) <= 4:
        return f"{len(blob)} bytes, too short for its header (the loader refuses it)", None
    (trie_size,) = struct.unpack("<I", blob[:4])
    if trie_size >= len(blob) - 4:
        return f"a trie of {trie_size} bytes in a blob of {len(blob)}, leaving no replacement strings", None
    if trie_size % 1024 or not trie_size:  # darts-clone's blocks of 256 units of 4 bytes
        return f"a trie of {trie_size} bytes, not whole blocks of 1,024 (the loader refuses it since 0.2.1)", None
    if blob[-1] != 0:
        return "the replacement strings do not end with a NUL (read past the blob before 0.2.1, refused since)", None
    import numpy as np

    units = np.frombuffer(blob, dtype="<u4", count=trie_size // 4, offset=4).astype(np.int64)
    strings = blob[4 + trie_size :]
    size = len(units)
    positions = np.arange(size, dtype=np.int64)
    offsets = (units >> 10) << ((units & (1 << 9)) >> 6)
    bases = positions ^ offsets
    if int(units[0]) & 0x800001FF:  # darts-clone's root: label 0, no leaf (no rule replaces the empty string)
        return f"its root unit 0x{int(units[0]):08x} has a label or a leaf, which darts-clone never writes", None
    # NumPy's comparison functions, not operators: atheris hooks every `==` and `<` the fuzz target runs, and one on
    # whole arrays kept them alive (the target grew by 4 KiB an input)
    walkable = np.equal(units >> 31, 0)  # a unit whose label can match an input byte (unit 0, the root, among them)
    leaves = walkable & np.equal((units >> 8) & 1, 1)
    in_trie = np.less(bases, size)
    if (leaves & ~in_trie).any():
        at = int(np.flatnonzero(leaves & ~in_trie)[0])
        return f"unit {at} has its leaf at unit {int(bases[at])}, past the trie's {size} units", None
    values_at = np.zeros(size, dtype=bool)
    values_at[bases[leaves]] = True
    outside = ~values_at & np.greater_equal(bases | 0xFF, size)  # any other unit, walked to or not, as the loader does
    if outside.any():
        at = int(np.flatnonzero(outside)[0])
        return f"unit {at} leads to units {int(bases[at])} and on, past the trie's {size} units", None
    kept = units[bases[leaves]]
    no_value = np.equal(kept >> 31, 0)
    if no_value.any():  # what darts-clone writes there is a value, marked so no byte can match it
        at = int(np.flatnonzero(leaves)[int(np.flatnonzero(no_value)[0])])
        return f"unit {at} has a leaf at unit {int(bases[at])}, which holds no value", None
    values = kept & 0x7FFFFFFF
    last_nul = strings.rfind(b"\0")
    if values.size and int(values.max()) > last_nul:
        at = int(values.max())
        return f"a leaf's replacement string at {at}, past the last NUL of {len(strings)} string bytes", None
    return "", values


def _is_text(data: bytes) -> bool:
    return bool(data) and all(32 <= byte < 127 or byte in (9, 10, 13) for byte in data[:4096])


def _shown(text: bytes) -> str:
    return text[:60].decode("utf-8", "backslashreplace")


# The names loaders open a SentencePiece model by (transformers' vocab_files_names, fairseq's .spm): a protobuf has
# no magic number, and a model written in another field order loads all the same (helper 215 hid a crashing trie so).
MODEL_NAMES = frozenset({"tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "sentencepiece.model",
                         "spm.model", "spm_char.model", "source.spm", "target.spm"})  # fmt: skip


def _named_like_model(name: str) -> bool:
    lowered = name.rsplit("/", 1)[-1].lower()
    return lowered in MODEL_NAMES or lowered.endswith(".spm")


class SentencePieceScanner:
    """SentencePiece model files, by their first piece or by the names loaders open them by."""

    name = "sentencepiece"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and (looks_like_sentencepiece(head.head) or _named_like_model(head.name))

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        from google.protobuf.message import DecodeError

        limit = ctx.limits.max_header_bytes
        if artifact.size > limit:
            detail = f"a SentencePiece model of {artifact.size} bytes is over {limit}"
            yield artifact.observe("scan.limit", limit="max-header-bytes", detail=detail)
            return
        with artifact.opener() as raw:
            data = read_capped(raw, limit)
        sniffed = looks_like_sentencepiece(data[:65536])
        if not sniffed and _is_text(data[:65536]):  # Llama 3's original/tokenizer.model is tiktoken's text
            yield artifact.observe(NOT_MINE_KIND)
            return
        model = _message_class("ModelProto")()
        try:
            model.ParseFromString(data)
        except (DecodeError, RecursionError) as exc:
            if not sniffed:  # only its name said SentencePiece: another format, which sentencepiece refuses too
                yield artifact.observe(NOT_MINE_KIND)
                return
            yield artifact.observe("sentencepiece.malformed", 0, reason=f"protobuf refuses it: {exc}"[:300])
            return
        if not sniffed and not model.pieces:
            yield artifact.observe(NOT_MINE_KIND)
            return
        for refusal in check_model(model):
            yield artifact.observe(refusal.kind, 0, reason=refusal.reason)
        trainer = model.trainer_spec
        model_type = _effective(trainer.model_type, MODEL_TYPES, 1)
        yield artifact.observe("fact.tokenizer", 0, pieces=len(model.pieces),
                               model_type=MODEL_TYPES.get(model_type, str(model_type)),
                               normalizer=model.normalizer_spec.name.decode("utf-8", "replace")[:60])  # fmt: skip
