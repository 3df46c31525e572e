"""Regenerate rules/allow-flair.yaml: the names flair's saved models import.

flair is not a test dependency (tests/data/flair keeps real files it wrote), so run this where it is installed beside
the test extra (`pip install flair`, never another torch), then `python tools/gen_flair_allowlist.py [--keep DIR]`.
Since flair 0.12 `model.save(path)` is a torch.save of a dict: the model's constructor arguments as plain values, its
embeddings as dicts of parameters (flair rebuilds them by class name among its own), its weights, and its label and
character dictionaries as `flair.data.Dictionary` objects, the one flair class in the pickle. Empirical, as the other
recorded lists: each model of the catalogue below is built on a tiny corpus and saved with `model.save`; the names
those pickles import are recorded by a find_class that refuses nothing, and flair's classes are screened as
scikit-learn's ecosystem is. Models with transformer embeddings are left out: they keep the tokenizer's files as a zip
in an `io.BytesIO`, which flair unpacks and hands to transformers, so they stay critical (WS-PKL-001); so are flair's
older saves (before 0.12), which pickle whole embedding objects.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gen_allowlists import catalogue_arguments, screened_catalogue
from gen_fastai_allowlist import loaded
from gen_stats_allowlist import _callable_attributes, screened_lists
from pack_file import write_pack

LIBRARIES = ("flair.",)
# Dictionary.__setstate__ sets __dict__ and, for files older than flair 0.9, add_unk from idx2item; its __eq__
# compares the three fields (so it has no __hash__).
FLAIR_HOOKS = {"flair.data.Dictionary": "__setstate__ sets __dict__ (and add_unk); __eq__ compares fields"}


def save_models(folder: Path) -> None:
    import torch
    from flair.data import Corpus, Dictionary, Sentence
    from flair.datasets import FlairDatapointDataset
    from flair.embeddings import (
        CharacterEmbeddings,
        DocumentPoolEmbeddings,
        DocumentRNNEmbeddings,
        FlairEmbeddings,
        OneHotEmbeddings,
        StackedEmbeddings,
    )
    from flair.models import LanguageModel, SequenceTagger, TextClassifier

    torch.manual_seed(0)

    def tagged(text: str, spans: list[tuple[int, str]]) -> Sentence:
        sentence = Sentence(text)
        for index, tag in spans:
            sentence[index : index + 1].add_label("ner", tag)
        return sentence

    def labelled(text: str, label: str) -> Sentence:
        sentence = Sentence(text)
        sentence.add_label("class", label)
        return sentence

    names = [tagged("George lives in Berlin", [(0, "PER"), (3, "LOC")]), tagged("Anna visits Paris", [(0, "PER")])]
    corpus = Corpus(FlairDatapointDataset(names * 5), FlairDatapointDataset(names), FlairDatapointDataset(names))
    tags = corpus.make_label_dictionary("ner", add_unk=False)
    texts = [labelled("i love this movie", "pos"), labelled("i hate this film", "neg")]
    texts_corpus = Corpus(FlairDatapointDataset(texts * 5), FlairDatapointDataset(texts), FlairDatapointDataset(texts))
    classes = texts_corpus.make_label_dictionary("class")
    characters = Dictionary(add_unk=True)
    for character in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ \n":
        characters.add_item(character)
    characters.save(folder / "characters.dict")  # CharacterEmbeddings reads its dictionary from a file
    one_hot = OneHotEmbeddings.from_corpus(corpus, embedding_length=8)
    language_model = LanguageModel(characters, is_forward_lm=True, hidden_size=16, nlayers=1, embedding_size=8)
    language_model.save(folder / "language_model.pt")
    stacked = StackedEmbeddings(
        [one_hot, CharacterEmbeddings(path_to_char_dict=str(folder / "characters.dict"), char_embedding_dim=8,
                                      hidden_size_char=8)]
    )  # fmt: skip
    text_one_hot = OneHotEmbeddings.from_corpus(texts_corpus, embedding_length=8)
    models = {
        "tagger_crf": SequenceTagger(hidden_size=16, embeddings=one_hot, tag_dictionary=tags, tag_type="ner"),
        "tagger_linear": SequenceTagger(hidden_size=16, embeddings=one_hot, tag_dictionary=tags, tag_type="ner",
                                        use_crf=False, use_rnn=False),
        "tagger_characters": SequenceTagger(hidden_size=16, embeddings=stacked, tag_dictionary=tags, tag_type="ner"),
        "tagger_flair_embeddings": SequenceTagger(hidden_size=16, embeddings=FlairEmbeddings(language_model),
                                                  tag_dictionary=tags, tag_type="ner"),
        "classifier_rnn": TextClassifier(DocumentRNNEmbeddings([text_one_hot], hidden_size=16),
                                         label_dictionary=classes, label_type="class"),
        "classifier_pool": TextClassifier(DocumentPoolEmbeddings([text_one_hot]), label_dictionary=classes,
                                          label_type="class"),
    }  # fmt: skip
    for name, model in models.items():
        model.save(folder / f"{name}.pt")
    (folder / "characters.dict").unlink()  # a plain dict of lists, not a model


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], FLAIR_HOOKS, {})
    names: set[str] = set()
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        for path in sorted(Path(folder).glob("*.pt")):
            _callable_attributes(loaded(path, names), members, LIBRARIES)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in Path(folder).glob("*.pt"):
                path.replace(args.keep / path.name)
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside flair (judged by the other packs): {', '.join(others)}")
    import flair

    write_pack(
        "allow-flair",
        f"Generated by tools/gen_flair_allowlist.py (flair {flair.__version__}): what flair's saved models import "
        "(taggers and text classifiers on one-hot, character and flair embeddings, a character language model), "
        "recorded from real saves, never a package wildcard: its Dictionary, restored from state only, its hooks "
        "reviewed; its method names and the classes that cannot be called. Transformer embeddings keep the "
        "tokenizer as a zip in an io.BytesIO and stay critical.\n",
        screened_lists(allowed, state_only, functions, members),
    )


if __name__ == "__main__":
    main()
