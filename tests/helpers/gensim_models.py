"""gensim models as its users save them: the catalogue tests/test_benign_real.py scans and tools/gen_allowlists.py
records the gensim names of (the allowlist is what these pickles import, not every class gensim defines)."""

from __future__ import annotations

from pathlib import Path

SEED = 7


def save_models(out: Path) -> None:
    """Each model kind saved with gensim's own save (a pickle, large arrays beside it as .npy files), plus the
    word2vec text and binary formats."""
    import numpy as np
    from gensim.corpora import Dictionary
    from gensim.models import (
        Doc2Vec,
        FastText,
        HdpModel,
        KeyedVectors,
        LdaModel,
        LdaMulticore,
        LogEntropyModel,
        LsiModel,
        Nmf,
        OkapiBM25Model,
        Phrases,
        RpModel,
        TfidfModel,
        Word2Vec,
    )
    from gensim.models.doc2vec import TaggedDocument
    from gensim.models.phrases import npmi_scorer
    from gensim.similarities import MatrixSimilarity, SparseMatrixSimilarity

    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["dogs", "ran", "fast"], ["a", "big", "red", "dog"]] * 20
    words = Word2Vec(sentences, vector_size=8, min_count=1, workers=1, seed=SEED)
    words.save(str(out / "w2v.model"))
    words.wv.save(str(out / "w2v.kv"))
    words.wv.save_word2vec_format(str(out / "w2v.bin"), binary=True)
    Word2Vec(sentences, vector_size=8, min_count=1, workers=1, seed=SEED, hs=1, negative=0, sg=1).save(
        str(out / "w2v-hs.model")
    )
    Word2Vec([[f"w{i}" for i in range(j, j + 20)] for j in range(0, 1500, 5)], vector_size=32, min_count=1, workers=1,
             seed=SEED).save(str(out / "w2v-big.model"), sep_limit=1000)  # fmt: skip
    fast = FastText(sentences, vector_size=8, min_count=1, workers=1, seed=SEED, bucket=500)
    fast.save(str(out / "fasttext.model"), sep_limit=1000)
    fast.wv.save(str(out / "fasttext.kv"))
    tagged = [TaggedDocument(s, [i]) for i, s in enumerate(sentences)]
    Doc2Vec(tagged, vector_size=8, min_count=1, workers=1, seed=SEED).save(str(out / "doc2vec.model"))
    vectors = KeyedVectors(4)
    vectors.add_vectors(["a", "b"], np.ones((2, 4), dtype=np.float32))
    vectors.save(str(out / "manual.kv"))
    dictionary = Dictionary(sentences)
    dictionary.save(str(out / "corpus.dict"))
    corpus = [dictionary.doc2bow(s) for s in sentences]
    LdaModel(corpus, num_topics=2, id2word=dictionary, random_state=SEED).save(str(out / "lda.model"))
    LdaMulticore(corpus, num_topics=2, id2word=dictionary, random_state=SEED, workers=1).save(str(out / "ldam.model"))
    LsiModel(corpus, num_topics=2, id2word=dictionary).save(str(out / "lsi.model"))
    HdpModel(corpus, id2word=dictionary, random_state=SEED).save(str(out / "hdp.model"))
    Nmf(corpus, num_topics=2, id2word=dictionary, random_state=SEED).save(str(out / "nmf.model"))
    tfidf = TfidfModel(corpus)
    tfidf.save(str(out / "tfidf.model"))
    TfidfModel(corpus, smartirs="ntc").save(str(out / "tfidf-smartirs.model"))  # keeps its weighting partials
    LogEntropyModel(corpus).save(str(out / "logentropy.model"))
    RpModel(corpus, num_topics=2).save(str(out / "rp.model"))
    OkapiBM25Model(corpus).save(str(out / "bm25.model"))
    MatrixSimilarity(tfidf[corpus], num_features=len(dictionary)).save(str(out / "matrix.index"))
    SparseMatrixSimilarity(tfidf[corpus], num_features=len(dictionary)).save(str(out / "sparse.index"))
    Phrases(sentences, min_count=1, threshold=0.1).save(str(out / "phrases.model"))
    Phrases(sentences, min_count=1, threshold=0.1, scoring=npmi_scorer).freeze().save(str(out / "frozen.model"))
    _more_topic_models(out, sentences)


def _more_topic_models(out: Path, sentences: list[list[str]]) -> None:
    """gensim's other trained models (found on gensim's own test data shipped on PyPI): author-topic, dynamic
    topic (LdaSeqModel), ensemble LDA, Poincaré embeddings, coherence and translation models."""
    import warnings

    from gensim.corpora import Dictionary
    from gensim.models import (
        AuthorTopicModel,
        CoherenceModel,
        EnsembleLda,
        LdaModel,
        LdaSeqModel,
        TranslationMatrix,
        Word2Vec,
    )
    from gensim.models.ensemblelda import rank_masking
    from gensim.models.poincare import PoincareModel

    dictionary = Dictionary(sentences)
    corpus = [dictionary.doc2bow(s) for s in sentences]
    half = len(corpus) // 2
    authors = {"alice": list(range(half)), "bob": list(range(half, len(corpus)))}
    AuthorTopicModel(corpus, num_topics=2, id2word=dictionary, author2doc=authors, random_state=SEED, passes=1).save(
        str(out / "author-topic.model")
    )
    with warnings.catch_warnings():  # one EM step on a toy corpus divides by a zero bound
        warnings.simplefilter("ignore", RuntimeWarning)
        LdaSeqModel(corpus=corpus, id2word=dictionary, time_slice=[half, len(corpus) - half], num_topics=2,
                    random_state=SEED, passes=1, em_min_iter=1, em_max_iter=1, lda_inference_max_iter=1).save(
            str(out / "ldaseq.model")
        )  # fmt: skip
    EnsembleLda(corpus=corpus, id2word=dictionary, num_topics=2, num_models=2, passes=1, random_state=SEED).save(
        str(out / "ensemble.model")
    )
    EnsembleLda(corpus=corpus, id2word=dictionary, num_topics=2, num_models=2, passes=1, random_state=SEED,
                masking_method=rank_masking).save(str(out / "ensemble-rank.model"))  # fmt: skip
    relations = [("kangaroo", "marsupial"), ("koala", "marsupial"), ("marsupial", "mammal"), ("cat", "mammal")]
    poincare = PoincareModel(relations, size=2, negative=2, seed=SEED)
    poincare.train(epochs=1)
    poincare.save(str(out / "poincare.model"))
    poincare.kv.save(str(out / "poincare.kv"))
    lda = LdaModel(corpus, num_topics=2, id2word=dictionary, random_state=SEED)
    coherence = CoherenceModel(model=lda, corpus=corpus, dictionary=dictionary, coherence="u_mass")
    coherence.save(str(out / "coherence.model"))
    coherence.get_coherence()  # saved after use it keeps its accumulator (review 21)
    coherence.save(str(out / "coherence-used.model"))
    texts = CoherenceModel(model=lda, texts=sentences, dictionary=dictionary, coherence="c_v", processes=1)
    texts.get_coherence()
    texts.save(str(out / "coherence-cv.model"))
    vectors = Word2Vec(sentences, vector_size=8, min_count=1, workers=1, seed=SEED).wv
    by_vectors = CoherenceModel(model=lda, texts=sentences, dictionary=dictionary, coherence="c_w2v",
                                keyed_vectors=vectors)  # fmt: skip
    by_vectors.get_coherence()
    by_vectors.save(str(out / "coherence-w2v.model"))
    words = Word2Vec(sentences, vector_size=8, min_count=1, workers=1, seed=SEED).wv
    TranslationMatrix(words, words, word_pairs=[("cat", "dog"), ("mat", "red"), ("sat", "ran")]).save(
        str(out / "translation.model")
    )
