"""SentencePiece models (sentencepiece_model.py): the ModelProto, its pieces and its precompiled normalization trie."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.scanners.sentencepiece_model import SentencePieceScanner

SCANNERS = [SentencePieceScanner()]


def one_input(data: bytes) -> None:
    harness.drive(SCANNERS, data, "tokenizer.model")


if __name__ == "__main__":
    fuzz(one_input)
