"""Review 29 (llama.cpp under ASan): what the vocabulary and hyperparameters mean to llama.cpp's loader. Repeated
tokens and broken layer or expert counts abort the process, an RWKV vocabulary can hang its tokenizer, PLaMo-2
tokens cost cubic load time, and a model without a vocabulary allocates `vocab_size` dummy tokens. Files are
written with the real `gguf` package's GGUFWriter, vocabularies shaped as llama.cpp's converters write them;
each hostile file differs from a clean one in the one value llama.cpp trips on."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from gguf.constants import GGUFEndian, GGUFValueType
from gguf.gguf_writer import GGUFWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.gguf_files import write_gguf
from tests.helpers.scanning import scan
from wscan.model import Severity
from wscan.scanners import gguf_header
from wscan.scanners.gguf_header import BIG_STRING, Caps, parse_gguf
from wscan.scanners.gguf_vocab import MAX_DUMMY_TOKENS, MAX_REPORTED

Setup = Callable[[GGUFWriter], None]
BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


def _vocab(model: str, tokens: list[str] | list[bytes], types: bool = True) -> Setup:
    """A vocabulary as converters write it: byte tokens typed BYTE (6), the others NORMAL (1); BPE with merges."""

    def setup(writer: GGUFWriter) -> None:
        writer.add_tokenizer_model(model)
        writer.add_token_list(tokens)
        if types:
            writer.add_token_types([6 if t in BYTE_TOKENS else 1 for t in tokens])
        if model == "gpt2":
            writer.add_token_merges(["a b"])

    return setup


def _hparams(*more: Setup) -> Setup:
    """The hyperparameters llama.cpp reads before the asserts under test, then `more`."""

    def setup(writer: GGUFWriter) -> None:
        writer.add_context_length(64)
        writer.add_embedding_length(8)
        for each in more:
            each(writer)

    return setup


def _findings(tmp_path: Path, setup: Setup, arch: str = "llama") -> set[tuple[str, Severity]]:
    report = scan(write_gguf(tmp_path / "model.gguf", setup, arch))
    return {(f.rule_id, f.severity) for f in report.findings}


def _messages(tmp_path: Path, setup: Setup, arch: str = "llama") -> list[str]:
    return [f.message for f in scan(write_gguf(tmp_path / "model.gguf", setup, arch)).findings]


# --- what converters write stays clean -------------------------------------------------------------------


def _spm(writer: GGUFWriter) -> None:
    tokens = ["<unk>", "<s>", "</s>", *BYTE_TOKENS, *(f"▁w{i}" for i in range(5000))]
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([-float(i) for i in range(len(tokens))])
    writer.add_token_types([2, 3, 3, *[6] * 256, *[1] * 5000])
    writer.add_block_count(2)
    writer.add_bos_token_id(1)


def _moe(writer: GGUFWriter) -> None:
    _hparams()(writer)
    writer.add_block_count(48)
    writer.add_nextn_predict_layers(1)
    writer.add_expert_count(128)
    writer.add_expert_used_count(8)
    writer.add_expert_group_count(8)
    writer.add_expert_group_used_count(4)


def _rwkv_tokens(drop: bytes | None = None) -> list[bytes]:
    """As llama.cpp's converter writes the RWKV world vocabulary: `<s>`, then `repr(token)[2:-1]` of each."""
    tokens = [bytes([b]) for b in range(256)] + [b"\n\n", b"the", b" the", b"\xe4\xbd\xa0\xe5\xa5\xbd", b"'\""]
    return [b"<s>"] + [repr(t)[2:-1].encode() for t in tokens if t != drop]


CLEAN: dict[str, tuple[str, Setup]] = {
    "spm vocabulary with scores and types": ("llama", _spm),
    "mixture of experts with groups and next-token layers": ("qwen3moe", _moe),
    "rwkv world vocabulary": ("rwkv6", _vocab("rwkv", _rwkv_tokens())),
    "plamo2 vocabulary": ("plamo2", _vocab("plamo2", ["<unk>", *BYTE_TOKENS, *(f"t{i}" * 4 for i in range(2000))])),
    "no vocabulary, ordinary size": ("llama", lambda w: (w.add_tokenizer_model("none"), w.add_vocab_size(32000))),
    "no vocabulary at the size limit": (
        "llama", lambda w: (w.add_tokenizer_model("no_vocab"), w.add_vocab_size(MAX_DUMMY_TOKENS))
    ),
    "hunyuan with one expert, zeroed by llama.cpp": (
        "hunyuan-dense",
        _hparams(lambda w: (w.add_block_count(4), w.add_expert_count(1), w.add_expert_used_count(1))),
    ),
    "per-layer expert counts (not judged)": (
        "llama",
        _hparams(lambda w: w.add_block_count(2), lambda w: w.add_expert_count(4),
                 lambda w: w.add_array("llama.expert_used_count", [1, 2])),
    ),
    "unknown architecture: llama.cpp refuses it first": ("notallm", _hparams(lambda w: w.add_block_count(0))),
    "scores as INT32, which llama.cpp reads": (
        "llama", lambda w: (_vocab("llama", BYTE_TOKENS)(w), w.add_array("tokenizer.ggml.scores", [1] * 256))
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CLEAN))
def test_what_converters_write_is_clean(tmp_path: Path, case: str) -> None:
    arch, setup = CLEAN[case]
    assert _findings(tmp_path, setup, arch) == set()


# --- repeated tokens abort llama.cpp (GGML_ASSERT at load, vocab_only included) -----------------------


@pytest.mark.parametrize(
    "tokens",
    [
        ["a", "b", "a"],
        [b"x\0one", b"x\0two"],  # different bytes, the same C string
        ["a", "b", "", "[EMPTY_2]"],  # llama.cpp names the empty token at id 2 `[EMPTY_2]`
        ["a", b"a\0"],
    ],
)
def test_tokens_llama_cpp_reads_as_the_same_abort_the_load(tmp_path: Path, tokens: list[str | bytes]) -> None:
    setup = _vocab("gpt2", tokens)  # type: ignore[arg-type]
    assert _findings(tmp_path, setup) == {("WS-GGUF-029", Severity.HIGH)}


def test_empty_tokens_alone_are_distinct(tmp_path: Path) -> None:
    assert _findings(tmp_path, _vocab("gpt2", ["a", "", "", "b"])) == set()


def test_many_repeats_are_counted_not_each_listed(tmp_path: Path) -> None:
    messages = _messages(tmp_path, _vocab("gpt2", ["a", "b"] * 20))
    assert len(messages) == MAX_REPORTED
    assert all("38 repeated in all" in m for m in messages)


def test_a_repeat_across_the_read_buffer_is_found(tmp_path: Path) -> None:
    # 40,000 tokens: the token list spans several 64 KiB reads; the repeat sits at the very end
    tokens = [f"tok{i:06d}" for i in range(40_000)] + ["tok000007"]
    assert ("WS-GGUF-029", Severity.HIGH) in _findings(tmp_path, _vocab("gpt2", tokens))


# --- per-token arrays llama.cpp indexes by token id ---------------------------------------------------


@pytest.mark.parametrize(
    ("key", "values", "subtype"),
    [
        ("tokenizer.ggml.scores", [0.0], GGUFValueType.FLOAT32),  # shorter than the tokens
        ("tokenizer.ggml.token_type", [1, 1], GGUFValueType.INT32),
        ("tokenizer.ggml.token_type", [1, 1, 1], GGUFValueType.UINT8),  # a type llama.cpp does not read as
        ("tokenizer.ggml.scores", ["x", "y", "z"], GGUFValueType.STRING),
    ],
)
def test_short_or_mistyped_token_arrays(tmp_path: Path, key: str, values: list[object], subtype: GGUFValueType) -> None:
    def setup(writer: GGUFWriter) -> None:
        _vocab("gpt2", ["a", "b", "c"], types=False)(writer)
        writer.add_key_value(key, values, GGUFValueType.ARRAY, sub_type=subtype)

    assert _findings(tmp_path, setup) == {("WS-GGUF-030", Severity.HIGH)}


def test_a_token_list_that_is_not_strings(tmp_path: Path) -> None:
    def setup(writer: GGUFWriter) -> None:
        writer.add_tokenizer_model("gpt2")
        writer.add_array("tokenizer.ggml.tokens", [1, 2, 3])

    assert _findings(tmp_path, setup) == {("WS-GGUF-030", Severity.HIGH)}


# --- a model without a vocabulary: vocab_size is an allocation count ---------------------------------


@pytest.mark.parametrize("model", ["none", "no_vocab"])
def test_a_huge_vocab_size_without_a_vocabulary(tmp_path: Path, model: str) -> None:
    setup: Setup = lambda w: (w.add_tokenizer_model(model), w.add_vocab_size(50_000_000))  # noqa: E731
    assert _findings(tmp_path, setup) == {("WS-GGUF-031", Severity.HIGH)}
    assert "about 2.0 GB" in _messages(tmp_path, setup)[0]


def test_a_huge_vocab_size_with_a_real_vocabulary_is_not_an_allocation(tmp_path: Path) -> None:
    setup: Setup = lambda w: (_vocab("gpt2", ["a", "b"])(w), w.add_vocab_size(50_000_000))  # noqa: E731
    assert _findings(tmp_path, setup) == set()


# --- load_hparams' asserts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "fragment"),
    [
        (lambda w: w.add_block_count(0), "block_count is 0"),
        (lambda w: w.add_block_count(513), "block_count is 513"),
        (lambda w: (w.add_block_count(4), w.add_nextn_predict_layers(5)), "exceeds block_count 4"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(2000), w.add_expert_used_count(2)), "exceeds 1024"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(2), w.add_expert_used_count(3)), "exceeds expert_count"),
        (lambda w: (w.add_block_count(4), w.add_expert_used_count(1)), "exceeds expert_count 0"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(8)), "expert_used_count is 0"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(8), w.add_expert_used_count(2),
                    w.add_expert_group_count(8)), "is not below 8"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(8), w.add_expert_used_count(2),
                    w.add_expert_group_count(3)), "do not split into 3"),
        (lambda w: (w.add_block_count(4), w.add_expert_count(8), w.add_expert_used_count(2),
                    w.add_expert_group_count(2)), "expert_group_used_count 0"),
        (lambda w: (w.add_block_count(4), w.add_expert_group_count(2)), "without experts"),
    ],
)  # fmt: skip
def test_hyperparameters_that_abort_a_full_load(tmp_path: Path, setup: Setup, fragment: str) -> None:
    assert _findings(tmp_path, _hparams(setup)) == {("WS-GGUF-032", Severity.HIGH)}
    assert fragment in _messages(tmp_path, _hparams(setup))[0]


# --- tokenizers that hang or take hours to build ------------------------------------------------------


def test_rwkv_double_newline_without_a_newline_hangs_every_load(tmp_path: Path) -> None:
    (message,) = _messages(tmp_path, _vocab("rwkv", _rwkv_tokens(drop=b"\n")), "rwkv6")
    assert "0x0a" in message and "at load" in message


def test_rwkv_byte_that_only_starts_tokens_hangs_a_prompt(tmp_path: Path) -> None:
    setup = _vocab("rwkv", _rwkv_tokens(drop=b"\xe4"))  # `\xe4` begins the two-character token only
    assert _findings(tmp_path, setup, "rwkv6") == {("WS-GGUF-033", Severity.HIGH)}
    assert "0xe4" in _messages(tmp_path, setup, "rwkv6")[0]


@pytest.mark.parametrize(("lengths", "flagged"), [([1100], False), ([2500], True), ([1500] * 4, True)])
def test_plamo2_token_length_costs_cubic_load_time(tmp_path: Path, lengths: list[int], flagged: bool) -> None:
    tokens = [*BYTE_TOKENS, *(chr(0x3042 + i) * n for i, n in enumerate(lengths))]  # characters, not bytes
    found = _findings(tmp_path, _vocab("plamo2", tokens), "plamo2")
    assert found == ({("WS-GGUF-034", Severity.HIGH)} if flagged else set())


# --- the token list is read exactly, whatever the buffer and the limits -------------------------------


def _raw_tokens(tokens: list[bytes]) -> bytes:
    items = b"".join(len(t).to_bytes(8, "little") + t for t in tokens)
    key = b"tokenizer.ggml.tokens"
    kv = len(key).to_bytes(8, "little") + key + (9).to_bytes(4, "little")
    kv += (8).to_bytes(4, "little") + len(tokens).to_bytes(8, "little") + items
    return b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + (1).to_bytes(8, "little") + kv


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=9000), max_size=40))
def test_tokens_are_read_as_written(tokens: list[bytes]) -> None:
    blob = _raw_tokens(tokens)
    parsed = parse_gguf(io.BytesIO(blob), len(blob), Caps(1 << 30, 1000, 1 << 20))
    assert parsed.problems == [] and parsed.complete
    assert parsed.tokens == tokens


def test_a_token_past_the_header_limit_is_the_same_finding_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = _raw_tokens([b"a" * 100] * 50)
    limit = len(blob) - 150
    parsed = parse_gguf(io.BytesIO(blob), len(blob), Caps(limit, 1000, 1 << 20))
    assert [p.kind for p in parsed.problems] == ["gguf.header_limit"]
    monkeypatch.setattr(gguf_header, "_CHUNK", 64)  # every string crosses a buffer
    again = parse_gguf(io.BytesIO(blob), len(blob), Caps(limit, 1000, 1 << 20))
    assert again.problems == parsed.problems


def test_a_huge_token_is_kept_cut_and_reported_oversized() -> None:
    blob = _raw_tokens([b"a", b"b" * (BIG_STRING + 10), b"c"])
    parsed = parse_gguf(io.BytesIO(blob), len(blob), Caps(1 << 30, 1000, 1 << 20))
    assert [p.kind for p in parsed.problems] == ["gguf.oversized_string"]
    assert [len(t) for t in parsed.tokens] == [1, BIG_STRING, 1]
    assert parsed.long_tokens == {1: BIG_STRING + 10}


# --- a BERT vocabulary with a BYTE-typed token aborts the load (token_to_byte has no WordPiece case) ---------


def _bert(types: list[int]) -> Setup:
    def setup(writer: GGUFWriter) -> None:
        writer.add_tokenizer_model("bert")
        writer.add_token_list(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##c"])
        writer.add_token_types(types)
        writer.add_bos_token_id(2)
        writer.add_sep_token_id(3)
        writer.add_unk_token_id(1)

    return setup


@pytest.mark.parametrize("endian", [GGUFEndian.LITTLE, GGUFEndian.BIG])
def test_a_byte_typed_wordpiece_token_aborts_the_load(tmp_path: Path, endian: GGUFEndian) -> None:
    # the review's ASan llama.cpp: exit 134 at llama-vocab.cpp:3207 for this file, 0 with "b" typed NORMAL
    path = write_gguf(tmp_path / "bert.gguf", _bert([3, 3, 3, 3, 3, 1, 6, 1]), "bert", endianess=endian)
    findings = scan(path).findings
    assert {(f.rule_id, f.severity) for f in findings} >= {("WS-GGUF-038", Severity.HIGH)}
    assert "Token 6 (b)" in next(f.message for f in findings if f.rule_id == "WS-GGUF-038")


def test_a_wordpiece_vocabulary_as_converters_type_it_is_clean(tmp_path: Path) -> None:
    assert _findings(tmp_path, _bert([3, 3, 3, 3, 3, 1, 1, 1]), "bert") == set()
