"""What llama.cpp does with a GGUF's vocabulary and hyperparameters, judged from the header alone.

The header parser (`gguf_header`) proves the file well formed; review 29 ran llama.cpp under ASan and found the
harm one level up, in what the metadata means to the loader: a repeated token or a zero block count trips a
GGML_ASSERT (the process aborts, `vocab_only` loads included), an RWKV vocabulary can make its tokenizer loop
forever, a PLaMo-2 token costs load time in the cube of its length, and `tokenizer.ggml.model = "none"` turns
`<arch>.vocab_size` into an allocation count. Each rule below is one of llama.cpp's own checks
(src/llama-vocab.cpp, src/llama-model.cpp), so files llama.cpp loads are not reported. What the first prompt
does to a vocabulary that loads is `gguf_prompt`'s.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator

from wscan.model import AttrValue
from wscan.scanners.gguf_header import ARCHITECTURES, TOKEN_TYPES_KEY, TOKENS_KEY, ParsedGguf, Setting
from wscan.scanners.gguf_prompt import prompt_problems
from wscan.scanners.problems import Problem

NO_VOCAB = frozenset({"none", "no_vocab"})  # llama.cpp then makes `<arch>.vocab_size` empty tokens
MAX_DUMMY_TOKENS = 1 << 22  # the largest real vocabularies have ~260,000 tokens; each dummy costs ~40 bytes
LLAMA_MAX_LAYERS = 512  # src/llama-hparams.h
LLAMA_MAX_EXPERTS = 1024
PLAMO2_COST = 10**10  # sum of cubed token lengths: ~30 s of load (review 29: 1,000 chars 3 s, 4,000 chars 233 s)
LLAMA_TOKEN_TYPE_BYTE = 6  # llama.h's llama_token_type
MAX_REPORTED = 5  # duplicate tokens reported one by one; the rest are counted
_ARRAY_TYPES = {  # per-token arrays, the element types llama.cpp reads them as
    "tokenizer.ggml.scores": ("FLOAT32", "INT32"),
    "tokenizer.ggml.token_type": ("INT32",),
}
# Architectures whose loader zeroes an expert count of 1 or less before the expert asserts (llama-model.cpp).
_ONE_EXPERT_IS_NONE = frozenset({"hunyuan-dense", "hunyuan_vl"})


def vocabulary_problems(parsed: ParsedGguf) -> list[Problem]:
    """Every vocabulary and hyperparameter value llama.cpp would abort, hang or over-allocate on. The
    hyperparameter asserts only run for architectures llama.cpp knows: it refuses the others before them."""
    settings = parsed.settings
    model = settings.get("tokenizer.ggml.model")
    tokenizer = model.value if model is not None and isinstance(model.value, str) else None
    arch = parsed.values.get("general.architecture")
    problems: list[Problem] = []
    if tokenizer in NO_VOCAB:
        problems += _dummy_tokens(settings, f"{arch}.vocab_size", tokenizer)
    elif tokenizer is not None and TOKENS_KEY in settings:
        at_load = [*_token_arrays(settings), *_duplicates(parsed.tokens, settings[TOKENS_KEY].at)]
        if tokenizer == "bert" and not at_load:
            at_load += _wpm_byte_tokens(parsed, settings[TOKEN_TYPES_KEY].at if TOKEN_TYPES_KEY in settings else 0)
        problems += at_load
        if tokenizer == "rwkv":
            problems += _rwkv_hang(parsed.tokens, settings[TOKENS_KEY].at)
        elif tokenizer == "plamo2":
            problems += _plamo2_cost(parsed, settings[TOKENS_KEY].at)
        if not at_load:  # a vocabulary llama.cpp refuses or aborts on at load never sees a prompt
            problems += prompt_problems(parsed)
    if isinstance(arch, str) and arch in ARCHITECTURES:
        problems += _hparam_asserts(settings, arch)
    return problems


def _problem(kind: str, at: int, **attrs: AttrValue) -> Problem:
    return Problem(f"gguf.{kind}", at, attrs)


def _dummy_tokens(settings: dict[str, Setting], key: str, tokenizer: str) -> list[Problem]:
    """llama.cpp resizes its token table to `vocab_size` for a model without a vocabulary: a 160-byte file
    asked for 2 GB in review 29."""
    size = settings.get(key)
    if size is None or not isinstance(size.value, int) or size.value <= MAX_DUMMY_TOKENS:
        return []
    return [_problem("vocab_allocation", size.at, key=key, value=size.value, tokenizer=tokenizer,
                     limit=MAX_DUMMY_TOKENS, gigabytes=f"{size.value * 40 / 1e9:.1f}")]  # fmt: skip


def _token_arrays(settings: dict[str, Setting]) -> Iterator[Problem]:
    """The per-token arrays llama.cpp indexes by token id: before PRs #20735 and #26690 it read them without
    checking their type or length (a heap read past the array); it refuses them now."""
    tokens = settings[TOKENS_KEY]
    if tokens.item is None or tokens.item.name != "STRING":
        found = tokens.item.name if tokens.item is not None else tokens.vtype.name
        yield _problem("vocab_array", tokens.at, key=TOKENS_KEY, reason=f"holds {found}, not strings")
        return
    for key, types in _ARRAY_TYPES.items():
        array = settings.get(key)
        if array is None:
            continue
        found = array.item.name if array.item is not None else array.vtype.name
        if array.item is None or found not in types:
            expected = " or ".join(types)
            yield _problem("vocab_array", array.at, key=key, reason=f"holds {found}, not {expected}")
        elif array.count < tokens.count:
            reason = f"has {array.count} entries for {tokens.count} tokens"
            yield _problem("vocab_array", array.at, key=key, reason=reason)


def llama_word(token: bytes, index: int) -> bytes:
    """Token `index` as llama.cpp keeps it: a C string, and an empty one named `[EMPTY_<index>]`."""
    return token.partition(b"\0")[0] or b"[EMPTY_%d]" % index


def _duplicates(tokens: list[bytes], at: int) -> list[Problem]:
    """llama.cpp maps each token's C string to its id and asserts no two collide (an abort, not an error):
    tokens equal up to a NUL count, and an empty token is named `[EMPTY_<id>]`."""
    unique = set(tokens)
    if len(unique) == len(tokens) and b"" not in unique and b"\0" not in b"".join(tokens):
        return []  # the common case, decided at C speed
    seen: dict[bytes, int] = {}
    repeats: list[tuple[int, int, bytes]] = []
    for index, token in enumerate(tokens):
        word = llama_word(token, index)
        first = seen.setdefault(word, index)
        if first != index:
            repeats.append((index, first, word))
    return [
        _problem("duplicate_token", at, key=TOKENS_KEY, index=index, first=first, repeats=len(repeats),
                 token=word[:80].decode("utf-8", "backslashreplace"))
        for index, first, word in repeats[:MAX_REPORTED]
    ]  # fmt: skip


def _wpm_byte_tokens(parsed: ParsedGguf, at: int) -> list[Problem]:
    """llama.cpp caches every token's text at load; for a BYTE-typed token of a WordPiece (BERT) vocabulary that
    ends in `token_to_byte`, which has no WordPiece case: GGML_ABORT (review 29's vocabulary fuzzer)."""
    types = array("i")
    types.frombytes(parsed.token_types[: 4 * len(parsed.tokens)])
    if parsed.byte_order != ("<" if sys.byteorder == "little" else ">"):
        types.byteswap()
    if LLAMA_TOKEN_TYPE_BYTE not in types:
        return []
    index = types.index(LLAMA_TOKEN_TYPE_BYTE)
    token = parsed.tokens[index][:80].decode("utf-8", "backslashreplace")
    return [_problem("byte_token_abort", at, key=TOKEN_TYPES_KEY, index=index, token=token, tokenizer="bert",
                     count=types.count(LLAMA_TOKEN_TYPE_BYTE))]  # fmt: skip


def _rwkv_unescape(token: bytes) -> bytes:
    """llama.cpp's `llama_unescape_rwkv_token`: `\\t \\n \\r`, `\\xHH` (its own loose hex), any other escaped byte."""
    if b"\\" not in token:
        return token
    out = bytearray()
    escaping, hex_left, acc = False, 0, 0
    for c in token:
        if hex_left:
            acc = ((acc << 4) + (c - 87 if c >= 97 else c - 48)) & 0xFF
            hex_left -= 1
            if not hex_left:
                out.append(acc)
                acc = 0
        elif escaping:
            escaping = False
            if c == 120:  # x
                hex_left = 2
            else:
                out.append({116: 9, 110: 10, 114: 13}.get(c, c))
        elif c == 92:  # backslash
            escaping = True
        else:
            out.append(c)
    return bytes(out)


def _rwkv_hang(tokens: list[bytes], at: int) -> list[Problem]:
    """RWKV's tokenizer, at a byte that starts some token but is no token itself and begins no longer match,
    pushes token 0 and starts again from position 0, forever, growing its output. llama.cpp tokenizes "\\n" at
    load, so a "\\n\\n" token without a "\\n" one hangs every load; any other such byte hangs a prompt holding it."""
    starts: set[int] = set()
    singles: set[int] = set()
    for index, token in enumerate(tokens):
        text = _rwkv_unescape(llama_word(token, index))
        if text:
            starts.add(text[0])
            if len(text) == 1:
                singles.add(text[0])
    missing = sorted(starts - singles)
    if not missing:
        return []
    when = "at load (llama.cpp tokenizes a newline then)" if 10 in missing else "on a prompt holding it"
    listed = ", ".join(f"0x{byte:02x}" for byte in missing[:8]) + (", ..." if len(missing) > 8 else "")
    return [_problem("tokenizer_hang", at, key=TOKENS_KEY, tokenizer="rwkv", bytes=listed, when=when)]


def _plamo2_cost(parsed: ParsedGguf, at: int) -> list[Problem]:
    """PLaMo-2's tokenizer builds every suffix of every token and every prefix of those: time in the cube of
    the token's length in characters (review 29: 1,000 characters 3 s, 4,000 characters 233 s)."""
    cost, longest = 0, 0
    for index, token in enumerate(parsed.tokens):
        length = parsed.long_tokens.get(index, len(token))
        if length > 64:  # shorter tokens cost nothing worth counting
            chars = len(token.decode("utf-8", "replace")) if index not in parsed.long_tokens else length
            cost += chars**3
            longest = max(longest, chars)
    if cost <= PLAMO2_COST:
        return []
    seconds = round(3 * cost / 1e9)
    return [_problem("tokenizer_cost", at, key=TOKENS_KEY, tokenizer="plamo2", longest=longest, seconds=seconds)]


def _hparam_asserts(settings: dict[str, Setting], arch: str) -> list[Problem]:
    """llama.cpp's `load_hparams` asserts on these counts (GGML_ASSERT: the process aborts on a full load)."""

    def number(name: str) -> int | None:
        setting = settings.get(f"{arch}.{name}")
        return setting.value if setting is not None and isinstance(setting.value, int) else None

    def per_layer(name: str) -> bool:  # an array per layer: its values were not kept
        setting = settings.get(f"{arch}.{name}")
        return setting is not None and setting.item is not None

    layers, nextn = number("block_count"), number("nextn_predict_layers") or 0
    experts, used = number("expert_count") or 0, number("expert_used_count") or 0
    groups, group_used = number("expert_group_count") or 0, number("expert_group_used_count") or 0
    if arch in _ONE_EXPERT_IS_NONE and experts <= 1:
        experts, used = 0, 0
    broken: list[tuple[str, str]] = []
    if layers is not None and not 0 < layers <= LLAMA_MAX_LAYERS:
        broken.append(("block_count", f"block_count is {layers}, not 1 to {LLAMA_MAX_LAYERS}"))
    elif layers is not None and nextn > layers:
        broken.append(("nextn_predict_layers", f"nextn_predict_layers {nextn} exceeds block_count {layers}"))
    if experts > LLAMA_MAX_EXPERTS:
        broken.append(("expert_count", f"expert_count {experts} exceeds {LLAMA_MAX_EXPERTS}"))
    if not per_layer("expert_used_count"):
        broken += _expert_asserts(experts, used, groups, group_used)
    ours = [setting.at for key, setting in settings.items() if key.startswith(f"{arch}.")]
    return [
        _problem("hparam_abort", settings[f"{arch}.{name}"].at if f"{arch}.{name}" in settings else min(ours),
                 key=f"{arch}.{name}", reason=reason)
        for name, reason in broken
    ]  # fmt: skip


def _expert_asserts(experts: int, used: int, groups: int, group_used: int) -> list[tuple[str, str]]:
    """The mixture-of-experts counts, in llama.cpp's order; the first broken one is enough."""
    checks = [
        (used <= experts, "expert_used_count", f"expert_used_count {used} exceeds expert_count {experts}"),
    ]
    if experts > 0:
        checks += [
            (used > 0, "expert_used_count", "expert_used_count is 0 with experts present"),
            (groups < experts, "expert_group_count", f"expert_group_count {groups} is not below {experts}"),
        ]
        if groups > 1:
            checks += [
                (experts % groups == 0, "expert_group_count", f"{experts} experts do not split into {groups} groups"),
                (0 < group_used < groups, "expert_group_used_count",
                 f"expert_group_used_count {group_used} is not between 1 and {groups - 1}"),
            ]  # fmt: skip
    else:
        checks.append((groups == 0, "expert_group_count", f"expert_group_count {groups} without experts"))
    for passed, name, reason in checks:
        if not passed:
            return [(name, reason)]
    return []
