"""Regenerate rules/allow-science.yaml: the names hmmlearn, scikit-survival, tslearn, pgmpy and NLTK models import.

None of these is a test dependency (tests/data/science keeps real files they wrote), so run this where they are
installed beside the test extra (`pip install hmmlearn scikit-survival tslearn pgmpy nltk`), then
`python tools/gen_science_allowlist.py [--keep DIR]`. Empirical, as statsmodels' list (`gen_stats_allowlist`, whose
recording this shares): each model of the catalogue below is fitted on a little data and saved the ways the libraries
document (pickle, joblib, tslearn's `to_pickle`), with every pickle protocol from 2; the names those pickles import are
recorded by a find_class that refuses nothing, and classes are screened as scikit-learn's ecosystem is. pgmpy's networks
are networkx graphs, whose view classes come with them; scikit-survival's encoder keeps narwhals' enum of dataframe
libraries.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

from gen_allowlists import _resolve, catalogue_arguments, screened_catalogue
from gen_stats_allowlist import recorded_catalogue, screened_lists
from pack_file import write_pack

LIBRARIES = ("hmmlearn.", "sksurv.", "tslearn.", "pgmpy.", "networkx.", "narwhals._utils.Implementation", "nltk.",
             "re.RegexFlag", "regex._regex_core.RegexFlag")
# Load hooks read in the installed source (hmmlearn 0.3.3, scikit-survival 0.28, tslearn 0.10, pgmpy 1.1.2,
# networkx 3.6).
SCIENCE_OWNER_HOOKS = {
    # networkx's views take their fields from the state (an edge view also its adjacency's items method, not called)
    "__setstate__ of networkx.classes.coreviews.AtlasView": "its _atlas from the state",
    "__setstate__ of networkx.classes.reportviews.NodeView": "its _nodes from the state",
    "__setstate__ of networkx.classes.reportviews.OutEdgeView": "its graph and adjacency from the state",
    "__hash__ of collections.abc.Mapping": "None: unhashable",
    "__eq__ of collections.abc.Mapping": "compares items",
    "__eq__ of collections.abc.Set": "compares members",
    # object.__new__, through networkx's dispatcher (which picks among installed backends, never a file's)
    "__new__ of networkx.classes.digraph.DiGraph": "object.__new__",
    # pgmpy's factors and graphs hash and compare what they hold (variables, values, nodes, edges, roles)
    "__hash__ of pgmpy.factors.discrete.DiscreteFactor.DiscreteFactor": "hashes variables and values",
    "__eq__ of pgmpy.factors.discrete.DiscreteFactor.DiscreteFactor": "compares scope, state names and values",
    "__hash__ of pgmpy.base.DAG.DAG": "hashes nodes, edges, latents and roles",
    "__eq__ of pgmpy.base.DAG.DAG": "compares nodes, edges, latents and roles",
    # a frozen dataclass (pickle restores it through its dict, never setattr) and a step function's arrays
    "__setattr__ of sksurv._dataframe._categorical_semantics.ColumnSemantics": "frozen: raises",
    "__hash__ of sksurv._dataframe._categorical_semantics.ColumnSemantics": "its fields",
    "__eq__ of sksurv._dataframe._categorical_semantics.ColumnSemantics": "its fields",
    "__hash__ of sksurv.functions.StepFunction": "None: __eq__ is defined",
    "__eq__ of sksurv.functions.StepFunction": "compares its arrays",
    # Enum.__new__ itself (enum copies it into the class's dict): looks a member up by value
    "__new__ of narwhals._utils.Implementation": "Enum.__new__",
    # NLTK (3.10): a FreqDist is a Counter that forgets its cached total when set; punkt's language variables keep
    # no state (their __setstate__ returns 1); a TimedPattern holds a pattern in slots, hashes and compares its
    # pattern's text and flags, and hands other non-dunder names to it (a pattern needs regex's compile, which
    # stays flagged: it takes the engine's compiled code from the file)
    "__setitem__ of nltk.probability.FreqDist": "sets its cached total to None, then the count",
    "__eq__ of collections.Counter": "compares counts",
    "__setstate__ of nltk.tokenize.punkt.PunktLanguageVars": "does nothing",
    "__getattr__ of nltk.redos.TimedPattern": "dunder names raise; others are its pattern's attribute",
    "__hash__ of nltk.redos.TimedPattern": "hashes its pattern's text, flags and timeout",
    "__eq__ of nltk.redos.TimedPattern": "compares its pattern's text, flags and timeout",
    # NLTK's language-model vocabulary compares its label, cutoff and counts; a ConditionalFreqDist is a defaultdict
    # (whose C type names the generic attribute lookup) of FreqDists, the factory its own __init__ sets
    "__eq__ of nltk.lm.vocabulary.Vocabulary": "compares its label, cutoff and counts",
    "__hash__ of nltk.lm.vocabulary.Vocabulary": "None: __eq__ is defined",
    "__getattribute__ of collections.defaultdict": "object's generic attribute lookup",
    # A Brill tagger's learned rules (NLTK 3.10.4): a Rule hashes its repr (template id, tags, each condition's feature
    # class and positions and value; cached in its dict), and compares class, tags and conditions; a Feature compares
    # class and positions, and is unhashable
    "__hash__ of nltk.tbl.rule.Rule": "hashes its repr: template id, tags, conditions (cached in its dict)",
    "__eq__ of nltk.tbl.rule.Rule": "compares class, tags and conditions",
    "__eq__ of nltk.tbl.feature.Feature": "compares class and positions",
    "__hash__ of nltk.tbl.feature.Feature": "None: __eq__ is defined",
}

# Classes real files have pickle call, with what their __reduce__ gives (reviewed): not state-only.
CALLED_CLASSES = {
    "nltk.probability.FreqDist": "Counter.__reduce__: called with its counts as a dict; Counter.__init__ updates "
    "itself with them, through FreqDist.__setitem__ (reviewed above)",
    "nltk.probability.ConditionalFreqDist": "its __reduce__: called with no arguments (its __init__ sets FreqDist as "
    "the default factory), then its (condition, FreqDist) items set",
}


def plain_slots(klass: type) -> bool:
    """Whether setattr on the class can only fill its slots: it keeps them in __slots__, has no __dict__ and no
    data descriptor but the slots' own (BUILD's slot state sets names with setattr: a property's setter would run;
    the screen has already left out a class with its own __setattr__)."""
    bases = klass.__mro__[:-1]
    slotted = all("__slots__" in vars(base) for base in bases)
    setters = [value for base in bases for value in vars(base).values() if hasattr(type(value), "__set__")]
    return slotted and all(type(value) is types.MemberDescriptorType for value in setters)


def save_models(folder: Path) -> None:
    import pickle

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)

    def dump(name: str, obj: object) -> None:  # joblib.dump pickles the same names, its arrays apart
        with (folder / f"{name}.pkl").open("wb") as stream:
            pickle.dump(obj, stream)

    from hmmlearn import hmm, vhmm

    sequence = rng.normal(size=(100, 2))
    dump("hmmlearn_gaussian", hmm.GaussianHMM(n_components=3, n_iter=5, random_state=0).fit(sequence))
    dump("hmmlearn_gmm", hmm.GMMHMM(n_components=2, n_mix=2, n_iter=3, random_state=0).fit(sequence))
    dump("hmmlearn_categorical", hmm.CategoricalHMM(n_components=2, n_iter=3, random_state=0)
         .fit(rng.integers(0, 4, size=(100, 1))))
    dump("hmmlearn_variational", vhmm.VariationalGaussianHMM(n_components=2, n_iter=3, random_state=0).fit(sequence))
    dump("hmmlearn_poisson", hmm.PoissonHMM(n_components=2, n_iter=3, random_state=0)
         .fit(rng.poisson(3, size=(100, 2))))
    dump("hmmlearn_multinomial", hmm.MultinomialHMM(n_components=2, n_trials=5, n_iter=3, random_state=0)
         .fit(rng.multinomial(5, [0.2, 0.3, 0.5], size=60)))
    dump("hmmlearn_variational_categorical", vhmm.VariationalCategoricalHMM(n_components=2, n_iter=3, random_state=0)
         .fit(rng.integers(0, 3, size=(100, 1))))

    from sklearn.pipeline import make_pipeline
    from sksurv.datasets import load_whas500
    from sksurv.ensemble import GradientBoostingSurvivalAnalysis, RandomSurvivalForest
    from sksurv.linear_model import CoxnetSurvivalAnalysis, CoxPHSurvivalAnalysis
    from sksurv.preprocessing import OneHotEncoder
    from sksurv.svm import FastSurvivalSVM
    from sksurv.tree import SurvivalTree
    from sksurv.util import Surv

    features = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    outcome = Surv.from_arrays(event=rng.integers(0, 2, 80).astype(bool), time=rng.random(80) * 10 + 1)
    dump("sksurv_coxph", CoxPHSurvivalAnalysis(alpha=0.1).fit(features, outcome))
    dump("sksurv_forest", RandomSurvivalForest(n_estimators=3, max_depth=3, random_state=0).fit(features, outcome))
    dump("sksurv_boosting", GradientBoostingSurvivalAnalysis(n_estimators=3, random_state=0).fit(features, outcome))
    dump("sksurv_coxnet", CoxnetSurvivalAnalysis(l1_ratio=0.9, fit_baseline_model=True).fit(features, outcome))
    dump("sksurv_svm", FastSurvivalSVM(max_iter=20, random_state=0).fit(features, outcome))
    dump("sksurv_tree", SurvivalTree(max_depth=3, random_state=0).fit(features, outcome))
    whas, whas_outcome = load_whas500()
    dump("sksurv_onehot_pipeline", make_pipeline(OneHotEncoder(), CoxPHSurvivalAnalysis(alpha=0.1))
         .fit(whas, whas_outcome))
    from sksurv.ensemble import ComponentwiseGradientBoostingSurvivalAnalysis, ExtraSurvivalTrees
    from sksurv.kernels import ClinicalKernelTransform
    from sksurv.linear_model import IPCRidge
    from sksurv.meta import Stacking
    from sksurv.nonparametric import CensoringDistributionEstimator, SurvivalFunctionEstimator
    from sksurv.svm import FastKernelSurvivalSVM, NaiveSurvivalSVM

    dump("sksurv_extra_trees", ExtraSurvivalTrees(n_estimators=3, max_depth=3, random_state=0).fit(features, outcome))
    dump("sksurv_componentwise", ComponentwiseGradientBoostingSurvivalAnalysis(n_estimators=5).fit(features, outcome))
    dump("sksurv_ipcridge", IPCRidge().fit(features, outcome))
    dump("sksurv_stacking", Stacking(meta_estimator=CoxPHSurvivalAnalysis(), base_estimators=[
        ("a", CoxPHSurvivalAnalysis()), ("b", CoxPHSurvivalAnalysis(alpha=1.0))]).fit(features, outcome))
    dump("sksurv_survival_function", SurvivalFunctionEstimator().fit(outcome))
    dump("sksurv_censoring", CensoringDistributionEstimator().fit(outcome))
    dump("sksurv_naive_svm", NaiveSurvivalSVM(max_iter=50, random_state=0).fit(features, outcome))
    dump("sksurv_kernel_svm", FastKernelSurvivalSVM(kernel="rbf", max_iter=10, random_state=0).fit(features, outcome))
    clinical = pd.DataFrame({"a": rng.normal(size=60), "b": pd.Categorical(rng.choice(["x", "y"], 60))})
    dump("sksurv_clinical_kernel", ClinicalKernelTransform().fit(clinical))

    from tslearn.clustering import KShape, TimeSeriesKMeans
    from tslearn.neighbors import KNeighborsTimeSeriesClassifier
    from tslearn.preprocessing import TimeSeriesScalerMeanVariance
    from tslearn.svm import TimeSeriesSVC

    series = rng.normal(size=(30, 20, 1)).cumsum(axis=1)
    labels = np.arange(30) % 2
    kmeans = TimeSeriesKMeans(n_clusters=2, metric="dtw", max_iter=3, random_state=0).fit(series)
    dump("tslearn_kmeans", kmeans)
    kmeans.to_pickle(str(folder / "tslearn_kmeans_to_pickle.pkl"))
    dump("tslearn_kshape", KShape(n_clusters=2, max_iter=3, random_state=0)
         .fit(TimeSeriesScalerMeanVariance().fit_transform(series)))
    dump("tslearn_knn", KNeighborsTimeSeriesClassifier(n_neighbors=2).fit(series, labels))
    dump("tslearn_svc", TimeSeriesSVC(kernel="gak").fit(series, labels))
    from tslearn.clustering import KernelKMeans
    from tslearn.early_classification import NonMyopicEarlyClassifier
    from tslearn.neighbors import KNeighborsTimeSeries, KNeighborsTimeSeriesRegressor
    from tslearn.piecewise import (
        OneD_SymbolicAggregateApproximation,
        PiecewiseAggregateApproximation,
        SymbolicAggregateApproximation,
    )
    from tslearn.preprocessing import TimeSeriesResampler, TimeSeriesScalerMinMax
    from tslearn.svm import TimeSeriesSVR

    values = labels.astype(float)
    for name, model in {
        "kernel_kmeans": KernelKMeans(n_clusters=2, kernel="gak", max_iter=3, random_state=0).fit(series),
        "knn_search": KNeighborsTimeSeries(n_neighbors=2).fit(series),
        "knn_regressor": KNeighborsTimeSeriesRegressor(n_neighbors=2).fit(series, values),
        "svr": TimeSeriesSVR(kernel="gak").fit(series, values),
        "scaler": TimeSeriesScalerMeanVariance().fit(series),
        "minmax": TimeSeriesScalerMinMax().fit(series),
        "resampler": TimeSeriesResampler(sz=8).fit(series),
        "paa": PiecewiseAggregateApproximation(n_segments=4).fit(series),
        "sax": SymbolicAggregateApproximation(n_segments=4, alphabet_size_avg=3).fit(series),
        "one_d_sax": OneD_SymbolicAggregateApproximation(n_segments=4, alphabet_size_avg=3, alphabet_size_slope=2)
        .fit(series),
        "early": NonMyopicEarlyClassifier(n_clusters=2, min_t=4, random_state=0).fit(series, labels),
    }.items():
        dump(f"tslearn_{name}", model)

    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork
    from pgmpy.parameter_estimator import DiscreteBayesianEstimator, DiscreteMLE

    data = pd.DataFrame(rng.integers(0, 2, size=(200, 4)), columns=list("ABCD"))
    network = DiscreteBayesianNetwork([("A", "B"), ("B", "C"), ("A", "D")])
    network.fit(data, estimator=DiscreteMLE())
    dump("pgmpy_network", network)
    bayes = DiscreteBayesianNetwork([("A", "B"), ("C", "B")])
    bayes.fit(data, estimator=DiscreteBayesianEstimator(prior_type="BDeu"))
    dump("pgmpy_bayes", bayes)
    dump("pgmpy_inference", VariableElimination(network))

    from nltk.classify import NaiveBayesClassifier
    from nltk.tag import BigramTagger, DefaultTagger, PerceptronTagger, RegexpTagger, UnigramTagger
    from nltk.tokenize import (
        BlanklineTokenizer,
        LineTokenizer,
        MWETokenizer,
        NLTKWordTokenizer,
        RegexpTokenizer,
        SpaceTokenizer,
        TabTokenizer,
        TreebankWordTokenizer,
        TweetTokenizer,
        WhitespaceTokenizer,
        WordPunctTokenizer,
    )
    from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTrainer

    tagged = [[("the", "DT"), ("cat", "NN"), ("sat", "VBD"), ("on", "IN"), ("a", "DT"), ("mat", "NN")],
              [("dogs", "NNS"), ("run", "VBP"), ("fast", "RB")]] * 20
    perceptron = PerceptronTagger(load=False)
    perceptron.train(tagged, nr_iter=2)
    dump("nltk_perceptron_tagger", perceptron)
    dump("nltk_bigram_tagger", BigramTagger(tagged, backoff=UnigramTagger(tagged, backoff=DefaultTagger("NN"))))
    dump("nltk_regexp_tagger", RegexpTagger([(r".*ing$", "VBG"), (r".*", "NN")]))
    trainer = PunktTrainer()  # how nltk_data's punkt pickles were made, on a few sentences here
    trainer.train("Mr. Smith went to Washington. He arrived at 5 p.m. on Monday. Dr. Jones was there. " * 30)
    dump("nltk_punkt", PunktSentenceTokenizer(trainer.get_params()))
    dump("nltk_regexp_tokenizer", RegexpTokenizer(r"\w+|\$[\d\.]+|\S+"))
    dump("nltk_treebank_tokenizer", TreebankWordTokenizer())
    for tokenizer in (WordPunctTokenizer(), WhitespaceTokenizer(), BlanklineTokenizer(), LineTokenizer(),
                      SpaceTokenizer(), TabTokenizer(), NLTKWordTokenizer(), MWETokenizer([("New", "York")]),
                      TweetTokenizer(preserve_case=False, reduce_len=True)):
        dump(f"nltk_{type(tokenizer).__name__.lower()}", tokenizer)
    features_of = [({"last": w[-1], "first": w[0]}, t) for s in tagged for w, t in s]
    dump("nltk_naive_bayes", NaiveBayesClassifier.train([({"last": w[-1]}, t) for s in tagged for w, t in s]))
    nltk_more(dump, tagged, features_of)


def nltk_more(dump: Callable[[str, object], None], tagged: list[list[tuple[str, str]]],
              features_of: list[tuple[dict[str, str], str]]) -> None:
    """NLTK's other trained models, saved with pickle as its book does (taggers, classifiers, language models,
    distributions, collocations, stemmers without patterns). Left out, and flagged: a SnowballStemmer (its `stem` is
    a bound method, pickled as getattr) and what keeps a `regex` pattern (regex._regex.compile takes the matching
    engine's compiled code from the file)."""
    import nltk
    from nltk.classify import DecisionTreeClassifier, MaxentClassifier, PositiveNaiveBayesClassifier
    from nltk.classify.scikitlearn import SklearnClassifier
    from nltk.collocations import BigramCollocationFinder
    from nltk.lm import MLE, KneserNeyInterpolated, Laplace, WittenBellInterpolated
    from nltk.lm.preprocessing import padded_everygram_pipeline
    from nltk.probability import (
        ConditionalFreqDist,
        ConditionalProbDist,
        FreqDist,
        KneserNeyProbDist,
        LidstoneProbDist,
        MLEProbDist,
        WittenBellProbDist,
    )
    from nltk.stem import LancasterStemmer, PorterStemmer
    from nltk.tag import AffixTagger, BigramTagger, DefaultTagger, TrigramTagger, UnigramTagger
    from nltk.tag.brill import brill24, fntbl37
    from nltk.tag.brill_trainer import BrillTaggerTrainer
    from nltk.tag.tnt import TnT
    from nltk.text import Text
    from nltk.tokenize import ToktokTokenizer
    from nltk.tokenize.punkt import PunktTrainer
    from sklearn.linear_model import LogisticRegression

    unigram = UnigramTagger(tagged, backoff=DefaultTagger("NN"))
    dump("nltk_trigram_tagger", TrigramTagger(tagged, backoff=BigramTagger(tagged, backoff=unigram)))
    dump("nltk_affix_tagger", AffixTagger(tagged, affix_length=-2, backoff=DefaultTagger("NN")))
    tnt = TnT()
    tnt.train(tagged)
    dump("nltk_tnt", tnt)
    dump("nltk_brill", BrillTaggerTrainer(unigram, fntbl37(), trace=0).train(tagged, max_rules=5))
    # One that learns rules (the unigram tagger above already tags its data right): `Rule`s of `Pos` and `Word`
    # features, which a tagger trained on real text keeps (helper 264 found one high).
    ambiguous = [*tagged, *[[("the", "DT"), ("run", "NN"), ("ends", "VBZ")]] * 2, [("dogs", "NNS"), ("run", "VBP")]]
    brill = BrillTaggerTrainer(unigram, brill24(), trace=0).train(ambiguous, max_rules=5, min_score=1)
    features = {type(feature).__name__ for rule in brill.rules() for feature, _ in rule._conditions}
    assert features == {"Pos", "Word"}, f"the Brill catalogue entry learned rules of {features or 'no'} features"
    dump("nltk_brill_rules", brill)
    trainer = PunktTrainer()
    trainer.INCLUDE_ALL_COLLOCS = True
    trainer.train("Mr. Smith went to Washington. He arrived at 5 p.m. on Monday. " * 20, finalize=False)
    dump("nltk_punkt_trainer", trainer)
    dump("nltk_toktok", ToktokTokenizer())
    dump("nltk_decision_tree", DecisionTreeClassifier.train(features_of))
    for algorithm in ("gis", "iis"):
        dump(f"nltk_maxent_{algorithm}", MaxentClassifier.train(features_of, algorithm=algorithm, max_iter=3, trace=0))
    dump("nltk_sklearn_classifier", SklearnClassifier(LogisticRegression()).train(features_of))
    dump("nltk_positive_naive_bayes", PositiveNaiveBayesClassifier.train([{"a": 1}, {"b": 1}], [{"c": 1}, {"a": 1}]))
    sentences = [[w for w, _ in s] for s in tagged]
    for model in (MLE, Laplace, KneserNeyInterpolated, WittenBellInterpolated):
        grams, vocabulary = padded_everygram_pipeline(2, sentences)
        language = model(2)
        language.fit(grams, vocabulary)
        dump(f"nltk_lm_{model.__name__.lower()}", language)
    words = [w for s in sentences for w in s]
    counts = FreqDist(words)
    dump("nltk_conditional_freq", ConditionalFreqDist(nltk.bigrams(words)))
    dump("nltk_conditional_prob", ConditionalProbDist(ConditionalFreqDist(nltk.bigrams(words)), MLEProbDist))
    dump("nltk_lidstone", LidstoneProbDist(counts, 0.1))
    dump("nltk_witten_bell", WittenBellProbDist(counts, bins=counts.B() + 5))
    dump("nltk_kneser_ney", KneserNeyProbDist(FreqDist(nltk.trigrams(words))))
    dump("nltk_collocations", BigramCollocationFinder.from_words(words))
    dump("nltk_stemmers", [PorterStemmer(), LancasterStemmer()])
    dump("nltk_text", Text(words))


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], {}, SCIENCE_OWNER_HOOKS)
    names, members = recorded_catalogue(save_models, LIBRARIES, args.keep)
    allowed, state_only, functions = screened_catalogue(names, LIBRARIES)
    state_only = [name for name in state_only if name not in CALLED_CLASSES]
    others = sorted(n for n in names if not n.startswith(LIBRARIES))
    print(f"recorded outside the libraries (judged by the other packs): {', '.join(others)}")
    versions = ", ".join(f"{lib} {__import__(lib).__version__}" for lib in ("hmmlearn", "sksurv", "tslearn", "pgmpy",
                                                                          "networkx", "nltk"))
    write_pack(
        "allow-science",
        f"Generated by tools/gen_science_allowlist.py ({versions}): what hidden Markov models, survival models, "
        "time-series estimators, Bayesian networks and NLTK's taggers, tokenizers and classifiers import, recorded "
        "from real saves, never a package wildcard: "
        "classes restored from state only, each screened for the hooks loading runs; the functions they keep as "
        "values; their method names and the classes that cannot be called.\n",
        {
            **screened_lists(allowed, state_only, functions, members),
            "slot-classes": [name for name in allowed if plain_slots(_resolve(name))],  # type: ignore[arg-type]
        },
    )


if __name__ == "__main__":
    main()
