"""Review 29 (llama.cpp under ASan): vocabularies that load and then abort the process at the first prompt.

`llama_tokenize(..., add_special=true)`, as llama-server and llama-cpp-python call it for every prompt, asserts
that each special token it adds exists (GGML_ASSERT), and an SPM vocabulary without byte tokens throws out of
it (std::terminate). Each hostile file differs from its clean twin in the one value llama.cpp trips on; files
are written with the real `gguf` package's GGUFWriter. Every pair was run through an ASan build of llama.cpp
(vocab_only load, then tokenize): the hostile files abort it, the clean twins tokenize.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from gguf.constants import GGUFValueType
from gguf.gguf_writer import GGUFWriter

from tests.helpers.gguf_files import write_gguf
from tests.helpers.scanning import scan
from tests.scanners.test_gguf_vocab import BYTE_TOKENS, Setup
from wscan.model import Severity
from wscan.scanners import gguf_prompt
from wscan.scanners.gguf_header import TOKENIZER_FLAGS, TOKENIZER_IDS

ABORT, BYTES = "WS-GGUF-036", "WS-GGUF-037"
Value = bool | int | str | tuple[object, GGUFValueType]
SPM_BASE = ["<unk>", "<s>", "</s>", "▁a", "a"]


def vocab(model: str, tokens: list[str], pre: str | None = None, merges: bool = True, **values: Value) -> Setup:
    """A vocabulary and `tokenizer.ggml.<name>` values typed as llama.cpp reads them (ids UINT32, flags BOOL),
    or as given in a (value, type) pair. BPE models get merges, as converters write them."""

    def setup(writer: GGUFWriter) -> None:
        writer.add_tokenizer_model(model)
        if pre is not None:
            writer.add_tokenizer_pre(pre)
        writer.add_token_list(tokens)
        writer.add_token_types([6 if t in BYTE_TOKENS else 1 for t in tokens])
        if merges and model in ("gpt2", "gemma4"):
            writer.add_token_merges(["a b"])
        for name, value in values.items():
            key = f"tokenizer.ggml.{name}"
            if isinstance(value, tuple):
                writer.add_key_value(key, value[0], value[1])
            elif isinstance(value, bool):
                writer.add_bool(key, value)
            elif isinstance(value, int):
                writer.add_uint32(key, value)
            else:
                writer.add_string(key, value)

    return setup


@dataclass(frozen=True)
class Case:
    """A hostile file, its clean twin (the one value fixed), and the prompt the harness tokenized."""

    hostile: Setup
    clean: Setup
    prompt: str = "a"


ABC = ["a", "b", "c"]
T5 = ["<pad>", "</s>", "<unk>", "▁a", "a"]
NULL = 0xFFFFFFFF
ABORTS: dict[str, Case] = {
    "spm: BOS id past a one-token vocabulary, default 1 too": Case(
        vocab("llama", ["▁a"], bos_token_id=NULL), vocab("llama", ["▁a"], bos_token_id=0)
    ),
    "spm: add_eos_token with the default EOS id 2 past two tokens": Case(
        vocab("llama", ["▁a", "b"], bos_token_id=0, add_eos_token=True),
        vocab("llama", ["▁a", "b"], bos_token_id=0, add_eos_token=False),
    ),
    "bpe: the llama3 pre-tokenizer adds BOS, default id 11 past three tokens": Case(
        vocab("gpt2", ABC, pre="llama3"), vocab("gpt2", ABC, pre="llama3", bos_token_id=0)
    ),
    "bpe: add_bos_token with a BOS id past the vocabulary": Case(
        vocab("gpt2", ABC, add_bos_token=True, bos_token_id=7), vocab("gpt2", ABC, add_bos_token=True, bos_token_id=2)
    ),
    "bpe: add_eos_token with an EOS id past the vocabulary": Case(
        vocab("gpt2", ABC, add_eos_token=True, eos_token_id=5), vocab("gpt2", ABC, add_eos_token=True, eos_token_id=1)
    ),
    "bpe: chatglm-bpe has no default BOS, even in a vocabulary past id 11": Case(
        vocab("gpt2", [*ABC, *(f"t{i}" for i in range(13))], pre="chatglm-bpe", add_bos_token=True),
        vocab("gpt2", [*ABC, *(f"t{i}" for i in range(13))], pre="chatglm-bpe", add_bos_token=False),
    ),
    "gemma4: BOS forced on whatever add_bos_token says, and no default id": Case(
        vocab("gemma4", ABC, add_bos_token=False), vocab("gemma4", ABC, add_bos_token=False, bos_token_id=0)
    ),
    "bert: BOS added whatever the flags say, default id 101 past the vocabulary": Case(
        vocab("bert", ["[PAD]", "a", "b"], seperator_token_id=2, add_bos_token=False),
        vocab("bert", ["[PAD]", "a", "b"], seperator_token_id=2, add_bos_token=False, bos_token_id=0),
    ),
    "bert: SEP added whatever the flags say, default id 102 past the vocabulary": Case(
        vocab("bert", ["[PAD]", "a", "b"], bos_token_id=0, add_sep_token=False),
        vocab("bert", ["[PAD]", "a", "b"], bos_token_id=0, add_sep_token=False, seperator_token_id=2),
    ),
    "t5: EOS added by default, default id 1 past a one-token vocabulary that loads": Case(
        vocab("t5", ["\n"]), vocab("t5", ["\n"], add_eos_token=False)
    ),
    "t5: add_bos_token without a BOS id (t5 has no default)": Case(
        vocab("t5", T5, add_bos_token=True), vocab("t5", T5, add_bos_token=True, bos_token_id=0)
    ),
}  # fmt: skip

BYTE_CASES: dict[str, Case] = {
    "spm without any byte token": Case(
        vocab("llama", SPM_BASE), vocab("llama", [*SPM_BASE, *BYTE_TOKENS]), prompt="x"
    ),
    "spm without the byte token of the prompt's character": Case(
        vocab("llama", [*SPM_BASE, *(t for t in BYTE_TOKENS if t != "<0x78>")]),
        vocab("llama", [*SPM_BASE, *(t for t in BYTE_TOKENS if t != "<0x78>"), "x"]),  # the byte itself will do
        prompt="x",
    ),
}  # fmt: skip

# Files llama.cpp loads and tokenizes, or refuses at load: no prompt ever aborts.
CLEAN: dict[str, Setup] = {
    "bpe without add_bos: the default id 11 past three tokens is never used": vocab("gpt2", ABC),
    "bpe with a BOS id past the vocabulary but add_bos false": vocab("gpt2", ABC, bos_token_id=NULL),
    "spm BOS id typed INT32: llama.cpp refuses the key": vocab("llama", ["a", *BYTE_TOKENS],
                                                               bos_token_id=(-1, GGUFValueType.INT32)),
    "add_bos_token typed UINT8: llama.cpp refuses the key": vocab("gpt2", ABC, pre="llama3",
                                                                  add_bos_token=(1, GGUFValueType.UINT8)),
    "unknown pre-tokenizer: llama.cpp refuses the vocabulary": vocab("gpt2", ABC, pre="nosuch", add_bos_token=True),
    "bpe without merges: llama.cpp refuses the vocabulary": vocab("gpt2", ABC, merges=False, add_bos_token=True),
    "rwkv adds no special tokens": vocab("rwkv", ["a", "b"], add_bos_token=True, bos_token_id=NULL),
    "plamo2 adds no special tokens": vocab("plamo2", ["<unk>", *BYTE_TOKENS], add_eos_token=True),
    "spm missing only the space byte, which tokenize never needs": vocab(
        "llama", [*SPM_BASE, *(t for t in BYTE_TOKENS if t != "<0x20>")]
    ),
    "spm as converters write it": vocab("llama", [*SPM_BASE, *BYTE_TOKENS], bos_token_id=1, eos_token_id=2,
                                        add_bos_token=True, add_eos_token=False),
    "llama3 bpe as converters write it": vocab("gpt2", [*ABC, *(f"t{i}" for i in range(20))], pre="llama3",
                                               bos_token_id=20, eos_token_id=21, add_bos_token=True),
    "bert with its default ids inside the vocabulary": vocab("bert", [f"w{i}" for i in range(200)]),
    "t5 with its default EOS inside the vocabulary": vocab("t5", T5),
    "t5 of one token but no newline: llama.cpp refuses it at load": vocab("t5", ["a"]),
    "kimi-k2 needs no merges": vocab("gpt2", ABC, pre="kimi-k2", merges=False, bos_token_id=0, add_bos_token=True),
}  # fmt: skip


def _findings(tmp_path: Path, setup: Setup, name: str = "model.gguf") -> set[tuple[str, Severity]]:
    report = scan(write_gguf(tmp_path / name, setup))
    return {(f.rule_id, f.severity) for f in report.findings}


@pytest.mark.parametrize("name", sorted(ABORTS))
def test_a_disabled_special_token_that_tokenize_adds_aborts_the_first_prompt(tmp_path: Path, name: str) -> None:
    case = ABORTS[name]
    assert (ABORT, Severity.HIGH) in _findings(tmp_path, case.hostile, "hostile.gguf")
    assert ABORT not in {rule for rule, _ in _findings(tmp_path, case.clean, "clean.gguf")}


@pytest.mark.parametrize("name", sorted(BYTE_CASES))
def test_spm_without_byte_tokens_terminates_on_a_character_outside_the_vocabulary(tmp_path: Path, name: str) -> None:
    case = BYTE_CASES[name]
    assert _findings(tmp_path, case.hostile, "hostile.gguf") == {(BYTES, Severity.MEDIUM)}
    assert _findings(tmp_path, case.clean, "clean.gguf") == set()


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_what_loads_and_tokenizes_or_is_refused_at_load_is_not_a_prompt_abort(tmp_path: Path, name: str) -> None:
    assert _findings(tmp_path, CLEAN[name]) == set()


def test_the_message_says_which_token_why_it_is_added_and_why_it_is_disabled(tmp_path: Path) -> None:
    setup = vocab("gpt2", ABC, add_bos_token=True, bos_token_id=7)
    (message,) = [f.message for f in scan(write_gguf(tmp_path / "m.gguf", setup)).findings]
    assert message.startswith("BOS is added to every prompt (tokenizer.ggml.add_bos_token is true)")
    assert "tokenizer.ggml.bos_token_id = 7 is past the 3 tokens, and so is the default id 11" in message
    assert "tokenizer gpt2 (BPE)" in message


def test_missing_byte_tokens_are_counted_and_listed(tmp_path: Path) -> None:
    setup = vocab("llama", [*SPM_BASE, *(t for t in BYTE_TOKENS if t not in ("<0x0A>", "<0xFF>"))])
    (finding,) = scan(write_gguf(tmp_path / "m.gguf", setup)).findings
    assert finding.evidence["missing"] == 2
    assert finding.evidence["bytes"] == "0x0a, 0xff"


def test_a_vocabulary_that_aborts_at_load_is_not_judged_again_at_the_prompt(tmp_path: Path) -> None:
    setup = vocab("llama", ["a", "a"])  # repeated token: llama.cpp aborts at load, before any prompt
    assert _findings(tmp_path, setup) == {("WS-GGUF-029", Severity.HIGH)}


def test_the_keys_judged_are_the_keys_the_parser_keeps() -> None:
    kept = TOKENIZER_IDS | TOKENIZER_FLAGS
    assert {key for pair in gguf_prompt.SPECIAL_KEYS.values() for key in pair} <= kept
    assert {"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.add_bos_token"} <= kept


def test_a_bool_value_is_kept_as_a_flag_not_as_a_number(tmp_path: Path) -> None:
    from wscan.scanners.gguf_header import Caps, parse_gguf

    path = write_gguf(tmp_path / "m.gguf", vocab("gpt2", ABC, add_bos_token=True))
    with path.open("rb") as raw:
        parsed = parse_gguf(raw, path.stat().st_size, Caps(1 << 24, 1 << 16, 1 << 20))
    setting = parsed.settings["tokenizer.ggml.add_bos_token"]
    assert (setting.flag, setting.value) == (True, None)
