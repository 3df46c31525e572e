"""What llama.cpp does with the first prompt to a GGUF's vocabulary: some files load and then abort on tokenizing.

Review 29 (llama.cpp under ASan) found vocabularies that load without a complaint and take the process down at
the first `llama_tokenize(..., add_special=true)`, the call llama-server and llama-cpp-python make for every
prompt: a GGML_ASSERT that the BOS, EOS or SEP token exists where the tokenizer adds one, and an SPM vocabulary
without byte tokens, whose fallback throws a C++ exception out of a C function (std::terminate).

The special token rules are llama.cpp's own (src/llama-vocab.cpp, `llama_vocab::impl::load` and `tokenize`):
each tokenizer model has default ids and add_* flags, some pre-tokenizers change them, a default id past the
vocabulary is disabled, and an id from the metadata replaces the default only when it is inside the vocabulary.
Files llama.cpp refuses at load (a mistyped key, an unknown pre-tokenizer, BPE without merges) are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from wscan.model import AttrValue
from wscan.scanners.gguf_header import TOKENIZER_FLAGS, TOKENIZER_IDS, TOKENS_KEY, ParsedGguf, Setting
from wscan.scanners.problems import Problem

MODEL_KEY = "tokenizer.ggml.model"
PRE_KEY = "tokenizer.ggml.pre"
MERGES_KEY = "tokenizer.ggml.merges"
SPECIAL_KEYS = {  # the special tokens tokenize asserts on, and the flag that makes it add each
    "BOS": ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token"),
    "EOS": ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token"),
    "SEP": ("tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_sep_token"),
}


@dataclass(frozen=True, slots=True)
class _Defaults:
    """A tokenizer model's type, default special ids (None: LLAMA_TOKEN_NULL), and the tokens its tokenize adds:
    by add_* flag (with the flag's default), or always (WPM adds BOS and SEP whatever the flags say)."""

    vocab_type: str
    ids: dict[str, int | None]
    adds: dict[str, bool]
    always: tuple[str, ...] = ()


_BPE = _Defaults("BPE", {"BOS": 11, "EOS": 11, "SEP": None}, {"BOS": False, "EOS": False})
DEFAULTS = {
    "llama": _Defaults("SPM", {"BOS": 1, "EOS": 2, "SEP": None}, {"BOS": True, "EOS": False}),
    "bert": _Defaults("WPM", {"BOS": 101, "EOS": None, "SEP": 102}, {}, always=("BOS", "SEP")),
    "gpt2": _BPE,
    "hybriddna": _BPE,
    "whitespace": _BPE,
    "gemma4": _Defaults("BPE", {"BOS": None, "EOS": None, "SEP": None}, {"BOS": False, "EOS": False}),
    "t5": _Defaults("UGM", {"BOS": None, "EOS": 1, "SEP": None}, {"BOS": False, "EOS": True}),
}
# rwkv, plamo2 and test add no special tokens. none/no_vocab abort any tokenize, but converters write them for
# models that take no text, and a server cannot prompt those.

# BPE pre-tokenizers llama.cpp knows (any other refuses the file; list of llama.cpp 0c1e570, the review's build),
# and those that change the special tokens.
BPE_PRES = frozenset({
    "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
    "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5", "youtu", "falcon", "mpt",
    "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
    "mellum", "modern-bert", "jais-2", "gemma4", "granite-embed-multi-311m", "sarvam-moe", "jina-v1-en",
    "jina-v2-code", "roberta-bpe", "whitespace", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo",
    "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "chatglm-bpe", "glm4", "glm5",
    "viking", "jais", "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe",
    "chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie", "granite-embed-multi-97m",
    "tiny_aya", "cohere2moe", "superbpe", "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe",
    "seed-coder", "hunyuan", "hunyuan-dense", "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe",
    "laguna", "minimax-m2", "solar-open", "mellum2",
})  # fmt: skip
ADD_BOS_PRES = frozenset({
    "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
    "tekken", "chameleon",
})  # fmt: skip
NO_BOS_PRES = frozenset({"chatglm-bpe", "glm4", "glm5"})
FORCED_BOS_PRES = frozenset({"gemma4", "granite-embed-multi-311m"})  # add_bos forced true after the metadata
NO_MERGES_PRE = "kimi-k2"
# SPM text has its spaces replaced by U+2581 before tokenizing: a space never needs its byte token.
SPM_BYTES = tuple(byte for byte in range(256) if byte != 0x20)
BYTE_TOKENS = [b"<0x%02X>" % byte for byte in range(256)]  # as converters write them: in order, in one run
MAX_LISTED = 8


def prompt_problems(parsed: ParsedGguf) -> list[Problem]:
    """The prompt-time aborts of a vocabulary llama.cpp loads (the caller has found no load-time problem)."""
    settings = parsed.settings
    model, tokens = settings.get(MODEL_KEY), settings.get(TOKENS_KEY)
    if model is None or not isinstance(model.value, str) or tokens is None or not _read_by_llama_cpp(settings):
        return []
    defaults = DEFAULTS.get(model.value)
    if defaults is None:
        return []
    pre = _pre_tokenizer(settings, model.value, defaults)
    if pre is None or (defaults.vocab_type == "UGM" and not _ugm_loads(parsed.tokens)):
        return []
    problems = list(_special_asserts(settings, model, defaults, pre, tokens.count))
    if defaults.vocab_type == "SPM":
        problems += _missing_byte_tokens(parsed.tokens, tokens.at, model.value)
    return problems


def _problem(kind: str, at: int, **attrs: AttrValue) -> Problem:
    return Problem(f"gguf.{kind}", at, attrs)


def _read_by_llama_cpp(settings: dict[str, Setting]) -> bool:
    """llama.cpp's get_key refuses a key of another type than it reads ("key ... has wrong type"): the load fails."""
    return all(setting.vtype.name == _read_as(key) for key, setting in settings.items() if _read_as(key))


def _read_as(key: str) -> str:
    """The GGUF type llama.cpp's vocabulary loader reads a kept key as ("" for keys it does not read this way)."""
    if key in TOKENIZER_IDS:
        return "UINT32"
    if key in TOKENIZER_FLAGS:
        return "BOOL"
    return "STRING" if key in (MODEL_KEY, PRE_KEY) else ""


def _pre_tokenizer(settings: dict[str, Setting], model: str, defaults: _Defaults) -> str | None:
    """The pre-tokenizer llama.cpp settles on ("" outside BPE), or None where it refuses the file: a BPE
    vocabulary with an unknown pre-tokenizer, or without its merges as an array of strings."""
    if defaults.vocab_type != "BPE":
        return ""
    pre = settings.get(PRE_KEY)
    name = "gemma4" if model == "gemma4" else pre.value if pre is not None and isinstance(pre.value, str) else ""
    if name and name not in BPE_PRES:
        return None
    merges = settings.get(MERGES_KEY)
    if merges is None:
        return name if name == NO_MERGES_PRE else None  # gemma4 is always "gemma4" here: it needs its merges
    return name if merges.item is not None and merges.item.name == "STRING" else None


def _ugm_loads(tokens: list[bytes]) -> bool:
    """llama.cpp tokenizes a newline while loading, before it reads the special ids: in a UGM vocabulary without
    a newline token that needs the unknown token, default id 2, and a shorter vocabulary fails the load."""
    return len(tokens) > 2 or any(token.partition(b"\0")[0] == b"\n" for token in tokens)


def _special_asserts(
    settings: dict[str, Setting], model: Setting, defaults: _Defaults, pre: str, n_tokens: int
) -> Iterator[Problem]:
    """Each special token tokenize adds (its GGML_ASSERT) while llama.cpp has disabled it."""
    ids = dict(defaults.ids)
    adds = dict(defaults.adds)
    if pre in ADD_BOS_PRES:
        adds["BOS"] = True
    if pre in NO_BOS_PRES:
        ids["BOS"] = None
    for special in adds:
        flag = settings.get(SPECIAL_KEYS[special][1])
        if flag is not None and flag.flag is not None:
            adds[special] = flag.flag
    if pre in FORCED_BOS_PRES:
        adds["BOS"] = True
    for special in (*defaults.always, *(name for name, added in adds.items() if added)):
        id_key, flag_key = SPECIAL_KEYS[special]
        reason = _disabled(settings.get(id_key), id_key, ids[special], n_tokens)
        if reason is None:
            continue
        why = _why_added(special, defaults, settings.get(flag_key), flag_key, pre)
        at = next((s.at for s in (settings.get(id_key), settings.get(flag_key)) if s is not None), model.at)
        yield _problem("prompt_abort", at, tokenizer=f"{model.value} ({defaults.vocab_type})", special=special,
                       added=why, reason=reason)  # fmt: skip


def _disabled(setting: Setting | None, key: str, default: int | None, n_tokens: int) -> str | None:
    """Why the special token ends up LLAMA_TOKEN_NULL, or None when it has an id: a default past the vocabulary
    is disabled, and a metadata id replaces the default only inside the vocabulary."""
    given = setting.value if setting is not None and isinstance(setting.value, int) else None
    if given is not None and given < n_tokens:
        return None
    if default is not None and default < n_tokens:
        return None
    stated = f"{key} is absent" if given is None else f"{key} = {given} is past the {n_tokens} tokens"
    if default is None:
        return f"{stated} and the tokenizer has no default"
    if given is None:
        return f"{stated} and the default id {default} is past the {n_tokens} tokens"
    return f"{stated}, and so is the default id {default}"


def _why_added(special: str, defaults: _Defaults, flag: Setting | None, flag_key: str, pre: str) -> str:
    """What makes tokenize add the token: the metadata flag, the tokenizer's default, or a pre-tokenizer."""
    if special in defaults.always:
        return f"{defaults.vocab_type} tokenize always adds it"
    if special == "BOS" and pre in FORCED_BOS_PRES:
        return f"llama.cpp forces add_bos for the {pre} pre-tokenizer"
    if flag is not None and flag.flag:
        return f"{flag_key} is true"
    if special == "BOS" and pre in ADD_BOS_PRES:
        return f"the {pre} pre-tokenizer adds it by default"
    return f"{defaults.vocab_type} adds it by default"


def _missing_byte_tokens(tokens: list[bytes], at: int, model: str) -> list[Problem]:
    """SPM falls back to byte tokens for a character outside the vocabulary: `<0xNN>`, else the byte itself as a
    token, else `token_to_id.at()` throws std::out_of_range out of llama_tokenize, a C function: std::terminate."""
    if _byte_run(tokens):
        return []
    words = set(tokens)
    if b"\0" in b"".join(tokens):  # rare: llama.cpp keeps each token up to its NUL
        words = {token.partition(b"\0")[0] for token in tokens}
    words.discard(b"\0")  # the byte 0 as a C string is empty, and no token is empty to llama.cpp
    missing = [byte for byte in SPM_BYTES if b"<0x%02X>" % byte not in words and bytes([byte]) not in words]
    if not missing:
        return []
    listed = ", ".join(f"0x{byte:02x}" for byte in missing[:MAX_LISTED])
    if len(missing) > MAX_LISTED:
        listed += ", ..."
    return [_problem("missing_byte_tokens", at, key=TOKENS_KEY, tokenizer=f"{model} (SPM)", missing=len(missing),
                     bytes=listed)]  # fmt: skip


def _byte_run(tokens: list[bytes]) -> bool:
    """Whether the 256 byte tokens lie in order in one run, as every converter writes them: the common case,
    decided at C speed."""
    try:
        start = tokens.index(BYTE_TOKENS[0])
    except ValueError:
        return False
    return tokens[start : start + 256] == BYTE_TOKENS
