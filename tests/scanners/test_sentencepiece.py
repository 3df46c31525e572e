"""SentencePiece models: every kind the real trainer writes passes, and each model the real loader refuses is flagged
(each loaded in a fresh process, since a damaged model may crash the C++ library)."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import sentencepiece as spm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from tests.helpers.mutations import damaged
from tests.helpers.scanning import rule_ids, scan_bytes
from wscan.scanners.base import Head
from wscan.scanners.sentencepiece_model import SentencePieceScanner, looks_like_sentencepiece

TEXT = "\n".join(f"the quick brown fox {i} jumps over the lazy dog, naïve café №{i * 7} 日本語" for i in range(400))
KINDS = {  # name: trainer arguments
    "unigram": {"model_type": "unigram", "vocab_size": 80},
    "bpe": {"model_type": "bpe", "vocab_size": 80},
    "char": {"model_type": "char"},
    "word": {"model_type": "word", "vocab_size": 60},
    "byte-fallback": {"model_type": "bpe", "vocab_size": 360, "byte_fallback": True},
    "symbols": {"model_type": "unigram", "vocab_size": 90, "user_defined_symbols": ["<mask>", "<sep>"],
                "control_symbols": ["<cls>"]},
    "identity": {"model_type": "unigram", "vocab_size": 80, "normalization_rule_name": "identity"},
    "nfkc-cf": {"model_type": "unigram", "vocab_size": 80, "normalization_rule_name": "nfkc_cf"},
    "no-unk-surface": {"model_type": "bpe", "vocab_size": 80, "unk_surface": "", "pad_id": 3},
    "custom-rules": {"model_type": "unigram", "vocab_size": 80, "normalization_rule_tsv": "{folder}/rules.tsv",
                     "denormalization_rule_tsv": "{folder}/rules.tsv"},
}  # fmt: skip
RULES = "41\t61\n42\t62\n43 44\t63\nFF21\t41\n"  # A->a, B->b, CD->c, fullwidth A->A (code points in hex)
LOAD = """
import sys, sentencepiece as spm
sp = spm.SentencePieceProcessor()
try:
    sp.LoadFromSerializedProto(open(sys.argv[1], "rb").read())
except Exception as exc:
    print("refused:", str(exc)[:200])
    sys.exit(0)
ids = sp.encode("the naïve fox, 日本語 №5 and <mask>")
sp.decode(ids)
print("loaded", sp.get_piece_size())
"""


@cache
def trained(name: str, folder: Path) -> bytes:
    prefix = folder / name
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    (folder / "rules.tsv").write_text(RULES, encoding="utf-8")
    arguments = {k: v.format(folder=folder) if isinstance(v, str) else v for k, v in KINDS[name].items()}
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), minloglevel=2, **arguments)
    return (folder / f"{name}.model").read_bytes()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("spm")
    return {name: trained(name, folder) for name in KINDS}


def loader(tmp_path: Path, data: bytes) -> str:
    """What sentencepiece does with the model, in a fresh process: 'loaded ...', 'refused: ...' or the signal."""
    path = tmp_path / "loaded.model"
    path.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, timeout=120)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else (
        f"exit {done.returncode}")


def parsed(data: bytes) -> Any:
    model = model_pb2.ModelProto()
    model.ParseFromString(data)
    return model


@pytest.mark.parametrize("name", sorted(KINDS))
def test_models_the_trainer_writes_pass(models: dict[str, bytes], name: str, tmp_path: Path) -> None:
    report = scan_bytes(tmp_path, models[name], "tokenizer.model")
    assert not report.findings, [f.message for f in report.findings]
    assert report.files[0].formats == ("sentencepiece",)
    assert loader(tmp_path, models[name]).startswith("loaded")


def test_it_is_read_under_any_name_and_not_otherwise(models: dict[str, bytes]) -> None:
    for data in models.values():
        assert SentencePieceScanner().accepts(Head(data[:65536], data[-65536:], len(data), "x.bin"))
    others = (b"\x0a\x02\x08\x01", b"\x08\x07\x12\x04onnx", b"PK\x03\x04", b"\x0a\x00", b"\x0a\x05\x0a\x09abc", b"")
    for other in others:
        assert not looks_like_sentencepiece(other), other


def _edited(data: bytes, edit: Any) -> bytes:
    model = parsed(data)
    edit(model)
    return bytes(model.SerializeToString())


def _duplicate(model: Any) -> None:
    model.pieces[5].piece = model.pieces[6].piece


def _two_unknown(model: Any) -> None:
    model.pieces[5].type = model_pb2.ModelProto.SentencePiece.UNKNOWN


def _no_unknown(model: Any) -> None:
    model.pieces[0].type = model_pb2.ModelProto.SentencePiece.NORMAL


def _byte_without_fallback(model: Any) -> None:
    model.pieces[5].piece, model.pieces[5].type = "<0x41>", model_pb2.ModelProto.SentencePiece.BYTE


def _missing_byte_piece(model: Any) -> None:  # on the byte-fallback model
    byte = next(p for p in model.pieces if p.type == model_pb2.ModelProto.SentencePiece.BYTE)
    byte.type = model_pb2.ModelProto.SentencePiece.NORMAL


def _empty_piece(model: Any) -> None:
    model.pieces[7].piece = ""


def _no_pieces(model: Any) -> None:
    del model.pieces[:]


def _short_charsmap(model: Any) -> None:
    model.normalizer_spec.precompiled_charsmap = b"\x01\x00"


def _trie_past_blob(model: Any) -> None:
    blob = model.normalizer_spec.precompiled_charsmap
    model.normalizer_spec.precompiled_charsmap = (len(blob) + 8).to_bytes(4, "little") + blob[4:]


def _root_out_of_bounds(model: Any) -> None:
    """sentencepiece's own regression test: unit 0 rewritten so the walk starts far past the trie."""
    blob = bytearray(model.normalizer_spec.precompiled_charsmap)
    blob[4:8] = (0x80000000 | (0x00200000 << 10) & 0xFFFFFFFF).to_bytes(4, "little")
    model.normalizer_spec.precompiled_charsmap = bytes(blob)


def _strings_cut(model: Any) -> None:
    """The replacement strings cut to a few bytes: leaves point past them."""
    blob = model.normalizer_spec.precompiled_charsmap
    size = int.from_bytes(blob[:4], "little")
    model.normalizer_spec.precompiled_charsmap = blob[: 4 + size + 3]


def _trie_all_ff(model: Any) -> None:
    """helper 214: a one-block trie of 0xFF units, which 0.2.0 and 0.2.1 load and crash on (SIGSEGV) at encode."""
    model.normalizer_spec.precompiled_charsmap = (1024).to_bytes(4, "little") + b"\xff" * 1024 + b"a\0"


def _leaves_past_strings(model: Any) -> None:
    """helper 214: every leaf's string at 0x7FFFFFFF, which 0.2.0 follows (SIGSEGV at encode)."""
    blob = bytearray(model.normalizer_spec.precompiled_charsmap)
    size = int.from_bytes(blob[:4], "little")
    for at in range(4, 4 + size, 4):
        unit = int.from_bytes(blob[at : at + 4], "little")
        if unit >> 31:
            blob[at : at + 4] = (0xFFFFFFFF).to_bytes(4, "little")
    model.normalizer_spec.precompiled_charsmap = bytes(blob)


def _no_final_nul(model: Any) -> None:
    model.normalizer_spec.precompiled_charsmap = model.normalizer_spec.precompiled_charsmap[:-1] + b"x"


def _nul_piece(model: Any) -> None:  # helper 214: 0.2.0 and 0.2.1 abort loading a unigram model with it
    model.pieces[8].piece = "\0"


def _long_piece(model: Any) -> None:  # 0.2.3 refuses; from ~58,000 bytes 0.2.0 and 0.2.1 overflow their stack
    model.pieces[8].piece = "a" * 9000


def _nan_score(model: Any) -> None:
    model.pieces[8].score = float("nan")


def _lower_case_byte(model: Any) -> None:  # on the byte-fallback model
    byte = next(p for p in model.pieces if p.piece == "<0x0A>")
    byte.piece = "<0x0a>"


def _only_control(model: Any) -> None:
    for piece in model.pieces[1:]:
        piece.type = model_pb2.ModelProto.SentencePiece.CONTROL


HOSTILE = {  # name: (source model, edit, rule)
    "trie-all-ff": ("unigram", _trie_all_ff, "WS-SPM-003"),
    "leaves-past-strings": ("unigram", _leaves_past_strings, "WS-SPM-003"),
    "no-final-nul": ("unigram", _no_final_nul, "WS-SPM-003"),
    "nul-piece": ("unigram", _nul_piece, "WS-SPM-002"),
    "long-piece": ("unigram", _long_piece, "WS-SPM-002"),
    "nan-score": ("unigram", _nan_score, "WS-SPM-002"),
    "lower-case-byte": ("byte-fallback", _lower_case_byte, "WS-SPM-002"),
    "only-control": ("unigram", _only_control, "WS-SPM-002"),
    "root-out-of-bounds": ("unigram", _root_out_of_bounds, "WS-SPM-003"),
    "strings-cut": ("unigram", _strings_cut, "WS-SPM-003"),
    "duplicate": ("unigram", _duplicate, "WS-SPM-002"),
    "two-unknown": ("unigram", _two_unknown, "WS-SPM-002"),
    "no-unknown": ("bpe", _no_unknown, "WS-SPM-002"),
    "byte-without-fallback": ("unigram", _byte_without_fallback, "WS-SPM-002"),
    "missing-byte-piece": ("byte-fallback", _missing_byte_piece, "WS-SPM-002"),
    "empty-piece": ("unigram", _empty_piece, "WS-SPM-002"),
    # no pieces: the file opens with its trainer spec, like any protobuf message; not sniffed, so an unknown format
    "no-pieces": ("unigram", _no_pieces, "WS-FILE-006"),
    "short-charsmap": ("unigram", _short_charsmap, "WS-SPM-003"),
    "trie-past-blob": ("bpe", _trie_past_blob, "WS-SPM-003"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_models_the_loader_refuses_are_flagged(models: dict[str, bytes], name: str, tmp_path: Path) -> None:
    source, edit, rule = HOSTILE[name]
    data = _edited(models[source], edit)
    assert not loader(tmp_path, data).startswith("loaded")
    assert rule_ids(scan_bytes(tmp_path, data, "tokenizer.model")) == {rule}


def test_a_model_protobuf_cannot_parse_is_malformed(models: dict[str, bytes], tmp_path: Path) -> None:
    data = models["bpe"][:-7]
    assert loader(tmp_path, data).startswith("refused")
    assert rule_ids(scan_bytes(tmp_path, data, "spiece.model")) == {"WS-SPM-001"}


def test_a_piece_type_the_enum_lacks_is_read_as_the_loader_reads_it(models: dict[str, bytes], tmp_path: Path) -> None:
    """proto2 sets an unknown enum value aside and reads the default: a piece type of 99 is a normal piece."""
    from wscan.scanners.sentencepiece_model import _message_class

    model = _message_class("ModelProto")()
    model.ParseFromString(models["unigram"])
    model.pieces[9].type = 99
    data = bytes(model.SerializeToString())
    assert parsed(data).pieces[9].type == model_pb2.ModelProto.SentencePiece.NORMAL
    assert loader(tmp_path, data).startswith("loaded")
    assert not scan_bytes(tmp_path, data, "tokenizer.model").findings


def test_a_piece_with_a_nul_is_refused(models: dict[str, bytes], tmp_path: Path) -> None:
    data = _edited(models["unigram"], lambda m: setattr(m.pieces[8], "piece", "a\0b"))
    assert loader(tmp_path, data).startswith("refused")
    assert rule_ids(scan_bytes(tmp_path, data, "tokenizer.model")) == {"WS-SPM-002"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(where=st.floats(0, 1), how=st.sampled_from(["cut", "set", "insert"]), byte=st.integers(0, 255))
def test_damaged_models_are_flagged_when_the_loader_refuses_them(
    models: dict[str, bytes], tmp_path: Path, where: float, how: str, byte: int
) -> None:
    data = damaged(models["identity"], where, how, byte)
    outcome = loader(tmp_path, data)
    flagged = {"WS-SPM-001", "WS-SPM-002", "WS-SPM-003"} & rule_ids(scan_bytes(tmp_path, data, "tokenizer.model"))
    if not outcome.startswith("loaded"):
        assert flagged or not looks_like_sentencepiece(data), outcome


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_damaged_normalization_rules_are_flagged_when_the_loader_refuses_them(
    models: dict[str, bytes], tmp_path: Path, changes: list[tuple[float, int]]
) -> None:
    """Bytes of the NFKC rules changed: every trie sentencepiece refuses (it validates since 0.2.1; earlier versions
    read out of bounds) is flagged. (wscan may flag a few more: it checks every unit, the loader the reachable ones.)"""
    model = parsed(models["unigram"])
    blob = bytearray(model.normalizer_spec.precompiled_charsmap)
    for where, byte in changes:
        blob[4 + int(where * (len(blob) - 5))] = byte
    model.normalizer_spec.precompiled_charsmap = bytes(blob)
    data = bytes(model.SerializeToString())
    outcome = loader(tmp_path, data)
    flagged = rule_ids(scan_bytes(tmp_path, data, "tokenizer.model"))
    if not outcome.startswith("loaded"):
        assert flagged == {"WS-SPM-003"}, outcome


def _amplified(model: Any) -> None:
    """helper 214: every leaf pointed at one 1 MiB replacement (0.2.3: 100 characters took 3.9 GB)."""
    blob = bytearray(model.normalizer_spec.precompiled_charsmap)
    size = int.from_bytes(blob[:4], "little")
    for at in range(4, 4 + size, 4):
        if int.from_bytes(blob[at : at + 4], "little") >> 31:
            blob[at : at + 4] = (0x80000000).to_bytes(4, "little")
    model.normalizer_spec.precompiled_charsmap = bytes(blob[: 4 + size]) + b"x" * (1 << 20) + b"\0"


def _prefix_chain(model: Any) -> None:
    """helper 215: a, aa, aaa, ... as user-defined pieces (70 crashed 0.2.0 and 0.2.1 encoding 2,000 characters)."""
    for length in range(1, 61):
        model.pieces.add(piece="ж" * length, score=0.0, type=model_pb2.ModelProto.SentencePiece.USER_DEFINED)


def _long_unk_surface(model: Any) -> None:
    model.trainer_spec.unk_surface = "?" * 5000


def _every_leaf_long(model: Any) -> None:
    """helper 215: every leaf at one 255-byte replacement (0.2.3: 917 MB to encode 300 KB of text)."""
    blob = bytearray(model.normalizer_spec.precompiled_charsmap)
    size = int.from_bytes(blob[:4], "little")
    for at in range(4, 4 + size, 4):
        if int.from_bytes(blob[at : at + 4], "little") >> 31:
            blob[at : at + 4] = (0x80000000).to_bytes(4, "little")
    model.normalizer_spec.precompiled_charsmap = bytes(blob[: 4 + size]) + b"x" * 255 + b"\0"


def _self_tests(model: Any) -> None:
    from wscan.scanners.sentencepiece_model import _message_class

    ours = _message_class("ModelProto")()
    ours.ParseFromString(model.SerializeToString())
    for _ in range(1500):
        ours.self_test_data.samples.add(input=b"the fox")
    model.Clear()
    model.MergeFromString(ours.SerializeToString())


@pytest.mark.parametrize("edit", [_amplified, _prefix_chain, _long_unk_surface, _every_leaf_long, _self_tests],
                         ids=lambda e: e.__name__.strip("_"))
def test_models_that_cost_far_more_than_their_text_are_flagged(
    models: dict[str, bytes], tmp_path: Path, edit: Any
) -> None:
    data = _edited(models["unigram"], edit)
    assert rule_ids(scan_bytes(tmp_path, data, "tokenizer.model")) == {"WS-SPM-004"}


def test_bpe_pieces_are_one_map(models: dict[str, bytes], tmp_path: Path) -> None:
    """sentencepiece 0.2.3 refuses a BPE piece that is both a control and a normal piece; a unigram model keeps two."""
    def both(model: Any) -> None:
        model.pieces[7].piece, model.pieces[7].type = "<s>", model_pb2.ModelProto.SentencePiece.NORMAL

    bpe = _edited(models["bpe"], both)
    assert not loader(tmp_path, bpe).startswith("loaded")
    assert rule_ids(scan_bytes(tmp_path, bpe, "tokenizer.model")) == {"WS-SPM-002"}
    unigram = _edited(models["unigram"], both)
    assert loader(tmp_path, unigram).startswith("loaded")
    assert not scan_bytes(tmp_path, unigram, "tokenizer.model").findings


# --- review: helper 215's red team --------------------------------------------------------------------------------


def test_what_trainers_and_vocabulary_merges_write_passes(tmp_path: Path) -> None:
    """Custom rules replacing a character with 400 bytes, a 401-character piece (a trainer allowed 512-character
    pieces keeps such a token from DNA or base64 text; training one takes minutes, so it is added here), and a
    vocabulary merged in as people extend Llama's (normal pieces at score 0, one of 601 characters): each loads, none
    is flagged."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    (tmp_path / "rules.tsv").write_text("41\t" + " ".join(["62"] * 400) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "rules"), model_type="unigram",
                                   vocab_size=80, minloglevel=2, normalization_rule_tsv=str(tmp_path / "rules.tsv"))
    model = parsed((tmp_path / "rules.model").read_bytes())
    model.pieces.add(piece="ACGT" * 100 + "A", score=-20.0)
    for word in ("合并", "词表", "w" * 601):
        model.pieces.add(piece=word, score=0.0)
    for data in ((tmp_path / "rules.model").read_bytes(), bytes(model.SerializeToString())):
        assert loader(tmp_path, data).startswith("loaded")
        assert not scan_bytes(tmp_path, data, "tokenizer.model").findings


def test_enum_values_are_read_as_the_loader_reads_them(models: dict[str, bytes], tmp_path: Path) -> None:
    """An unknown model type is unigram to the loader, and an enum value is cut to 32 bits (2^32 + 2 is UNKNOWN)."""
    from wscan.scanners.sentencepiece_model import _message_class

    ours = _message_class("ModelProto")()
    ours.ParseFromString(models["unigram"])
    ours.trainer_spec.model_type = 99
    data = bytes(ours.SerializeToString())
    unk = b"\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02"
    wide = b"\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x82\x80\x80\x80\x10"  # type 2^32 + 2, ten bytes longer
    data = data.replace(b"\x0a\x0e" + unk, b"\x0a\x12" + wide, 1)
    assert loader(tmp_path, data).startswith("loaded")
    assert not scan_bytes(tmp_path, data, "tokenizer.model").findings


def test_a_model_laid_out_another_way_is_read_by_its_name(models: dict[str, bytes], tmp_path: Path) -> None:
    """helper 215: a crashing trie in a file opening with an unknown field; sentencepiece reads it, the sniff not."""
    data = b"\xa2\x06\x00" + _edited(models["unigram"], _trie_all_ff)  # field 100, empty, first
    assert not looks_like_sentencepiece(data)
    assert not loader(tmp_path, data).startswith("loaded")
    assert rule_ids(scan_bytes(tmp_path, data, "tokenizer.model")) == {"WS-SPM-003"}
    assert rule_ids(scan_bytes(tmp_path, data, "weights.bin")) == {"WS-FILE-006"}  # no name, no magic: unknown


def test_a_tiktoken_file_named_like_a_model_is_left_alone(tmp_path: Path) -> None:
    """Llama 3's original/tokenizer.model is tiktoken's base64 text, not a SentencePiece model."""
    data = b"".join(b"%s %d\n" % (__import__("base64").b64encode(bytes([i % 256, i // 7])), i) for i in range(300))
    report = scan_bytes(tmp_path, data, "tokenizer.model")
    assert "sentencepiece" not in report.files[0].formats and not rule_ids(report) - {"WS-FILE-006"}


def test_a_word_model_of_nested_words_is_not_costly(models: dict[str, bytes], tmp_path: Path) -> None:
    """A word model looks whole words up: nested words (x, xx, xxx, ...) cost nothing there, unlike in a unigram one."""
    def nested(model: Any) -> None:
        for length in range(1, 80):
            model.pieces.add(piece="\u2581" + "x" * length, score=-30.0)

    assert not scan_bytes(tmp_path, _edited(models["word"], nested), "tokenizer.model").findings
    assert rule_ids(scan_bytes(tmp_path, _edited(models["unigram"], nested), "tokenizer.model")) == {"WS-SPM-004"}
