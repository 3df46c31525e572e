"""Regenerate rules/allow-*.yaml: the exact callables real checkpoints need.

Run at development time with the test extra installed (`python tools/gen_allowlists.py`). The scanner
never imports these libraries; it only compares names. Each list is generated from a library's own
public classes, never a module wildcard, and reviewed in the diff before it is committed.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import inspect
import io
import os
import pickle
import pkgutil
import re
import sys
import tempfile
import types
import typing
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml
from pack_file import record_imports, submodules, write_pack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.helpers: the catalogues real files come from

RULES = Path(__file__).resolve().parents[1] / "rules"

# Hand-picked: what pickle itself, NumPy and plain containers need.
CORE = [
    "builtins.set", "builtins.frozenset", "builtins.bytearray", "builtins.complex", "builtins.slice",
    "builtins.range", "builtins.object", "builtins.dict", "builtins.list", "builtins.tuple",
    "builtins.int", "builtins.float", "builtins.str", "builtins.bytes", "builtins.bool",
    "collections.OrderedDict", "collections.defaultdict", "collections.Counter", "collections.deque",
    "copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__", "_codecs.encode",
    # Constants and a mapping pickle writes by name (fp hunt, 2026-12-03): nothing to run.
    "builtins.Ellipsis", "builtins.NotImplemented", "collections.ChainMap",
    "datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta", "datetime.timezone",
    "decimal.Decimal", "fractions.Fraction", "uuid.UUID", "pathlib.PosixPath", "pathlib.WindowsPath",
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
    "numpy._core.multiarray._reconstruct", "numpy._core.multiarray.scalar", "numpy.ma.core._mareconstruct",
    "numpy.ma.core.MaskedArray", "numpy.random._pickle.__randomstate_ctor",
    "numpy.random._pickle.__bit_generator_ctor", "numpy.random._pickle.__generator_ctor",
    "numpy.random.mtrand.RandomState", "numpy.random._mt19937.MT19937", "numpy.random._pcg64.PCG64",
    "numpy.random._pcg64.PCG64DXSM", "numpy.random._philox.Philox", "numpy.random._sfc64.SFC64",
    "numpy.random._generator.Generator", "numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer",
    "joblib.numpy_pickle.NumpyArrayWrapper",
    # joblib 0.9's wrappers of arrays kept beside the pickle: the file their state names is judged and scanned
    # (scanners/joblib_legacy.py, WS-PKL-034).
    "joblib.numpy_pickle.NDArrayWrapper", "joblib.numpy_pickle_compat.NDArrayWrapper",
    "joblib.numpy_pickle.ZNDArrayWrapper", "joblib.numpy_pickle_compat.ZNDArrayWrapper",
    # np.vectorize keeps the function it calls as `pyfunc` (judged as a called attribute); a SciPy discrete
    # distribution pickles its `vecentropy` so.
    "numpy.vectorize",
    # SeedSequence (a random_state of HistGradientBoosting & co.) and its Cython unpickle helper.
    "numpy.random.bit_generator.SeedSequence", "numpy.random.bit_generator.__pyx_unpickle_SeedSequence",
    # NumPy 2 records a masked array's class by its public module.
    "numpy.ma.MaskedArray",
    # np.matrix, an ndarray subclass that old scikit-learn and SciPy code pickles (joblib's own test data has it):
    # rebuilt through _reconstruct, its constructor parses strings with ast.literal_eval only.
    "numpy.matrixlib.defmatrix.matrix", "numpy.matrix",
    # functools.partial(sklearn.utils.validation.check_array, ...) is what HistGradientBoosting with
    # categorical features stores. Making a partial calls nothing: the wrapped callable is a global of its own,
    # judged like any other, and calling the partial at load time is WS-PKL-005. The rest of functools
    # (reduce, update_wrapper, total_ordering, ...) stays dangerous: pickle.yaml lists only partial as an
    # exception.
    "functools.partial",
    # Training scripts save their parsed arguments and paths in checkpoints (fairseq-style `args`). Namespace
    # only sets the attributes it is given; the pathlib classes only hold parts (pickle.yaml excepts these
    # exact classes from the dangerous `pathlib`; their methods, such as write_text, stay dangerous).
    "argparse.Namespace", "pathlib.Path", "pathlib.PurePath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "pathlib._local.Path", "pathlib._local.PosixPath", "pathlib._local.WindowsPath", "pathlib._local.PurePath",
    "pathlib._local.PurePosixPath", "pathlib._local.PureWindowsPath",
    # A marker class (calling it raises) that configuration objects record as a type (pickle.yaml excepts it
    # from `typing`). OmegaConf's containers are not allowed: comparing two of them (dict keys) resolves their
    # interpolations at load, and a resolver's name or argument can be computed there (${${n}:...},
    # oc.decode), so no look at the strings can clear them.
    "typing.Any",
    # ndarray subclasses restored by ndarray's own __setstate__ (record arrays, char arrays), NumPy's polynomial
    # classes and poly1d (a plain attribute dict of coefficient arrays), and the StringDType rebuilder (NumPy 2).
    "numpy.rec.recarray", "numpy.recarray", "numpy.record", "numpy.char.chararray", "numpy.chararray", "numpy.poly1d",
    "numpy.polynomial.polynomial.Polynomial", "numpy.polynomial.chebyshev.Chebyshev",
    "numpy.polynomial.legendre.Legendre", "numpy.polynomial.laguerre.Laguerre", "numpy.polynomial.hermite.Hermite",
    "numpy.polynomial.hermite_e.HermiteE", "numpy._core._internal._convert_to_stringdtype_kwargs",
    # Older NumPy's spellings of the same (real files from NumPy 1.x and before 1.0, found by a sweep of test data
    # shipped on PyPI): record and char arrays by module, the pre-1.0 array rebuilder (ndarray.__new__ of the
    # subtype, which is judged on its own) and the pre-1.17 RandomState rebuilder (a fresh RandomState(seed=0)).
    "numpy.core.records.recarray", "numpy.core.records.record", "numpy._core.records.recarray",
    "numpy._core.records.record", "numpy.core.defchararray.chararray", "numpy._core.defchararray.chararray",
    "numpy.core._internal._reconstruct", "numpy.random.__RandomState_ctor",
    # An attribute bag statsmodels' ARIMA results keep (pickle.yaml excepts it from the dangerous `types`), and the
    # bound-method maker cloudpickle calls (fastai's exports): it binds a function, judged on its own, to an object.
    "types.SimpleNamespace", "types.MethodType",
    # The config dict research checkpoints keep (a dict whose items are attributes too; an item named like a
    # method pickle calls is WS-PKL-021).
    "easydict.EasyDict",
    # Lightning's AttributeDict, in the hyperparameters of its checkpoints (the same kind of dict; each spelling
    # Lightning and its standalone packages define it under).
    "lightning.fabric.utilities.data.AttributeDict", "lightning.pytorch.utilities.parsing.AttributeDict",
    "lightning_fabric.utilities.data.AttributeDict", "pytorch_lightning.utilities.parsing.AttributeDict",
    # A datetime's named time zone (pandas Timestamps, checkpoint timestamps): ZoneInfo pickles as
    # getattr(ZoneInfo, "_unpickle")(key, from_cache), which reads that zone from the system's tz database (keys
    # are refused unless they are normalized relative paths).
    "zoneinfo.ZoneInfo", "zoneinfo.ZoneInfo._unpickle",
    # More of the standard library as pickle writes it (fp hunt, 2026-12-05), each a constructor that checks and
    # keeps its arguments: arrays (_array_reconstructor refuses a class that is not an array type), addresses and
    # networks (parsed from text), a compiled pattern (re.compile's cache: compiling runs no matching), function
    # signatures and their parameters with their kinds and the empty marker, and HTTP status and method enums
    # (calling an enum with members looks a member up). inspect and http are dangerous modules: pickle.yaml excepts
    # exactly these names, and the rest of both (getsource, http.client, http.server) stays dangerous.
    "array.array", "array._array_reconstructor",
    "ipaddress.IPv4Address", "ipaddress.IPv6Address", "ipaddress.IPv4Network", "ipaddress.IPv6Network",
    "ipaddress.IPv4Interface", "ipaddress.IPv6Interface", "re._compile",
    "inspect.Signature", "inspect.Parameter", "inspect._ParameterKind", "inspect._empty",
    "http.HTTPStatus", "http.HTTPMethod",
]  # fmt: skip

# Allowed classes that keep attributes in __slots__, so real pickles restore them with BUILD's slot state
# (setattr): found by scanning the real files of tests/test_benign_real.py (WS-PKL-023 flags any other).
SLOT_CLASSES: list[str] = []

# NumPy reductions that estimators keep as parameters (FeatureAgglomeration's pooling_func, ...): pure array
# maths. Not the module: numpy also holds load, fromfile, vectorize, apply_along_axis and add_newdoc (which
# imports a module named by its argument).
NUMPY_FUNCTIONS = [
    "mean", "median", "average", "std", "var", "sum", "prod", "max", "min", "amax", "amin", "ptp", "percentile",
    "quantile", "nanmean", "nanmedian", "nanmax", "nanmin", "nansum", "nanstd", "nanvar", "nanprod",
    "nanpercentile", "nanquantile", "argmax", "argmin", "nanargmax", "nanargmin", "cumsum", "cumprod",
    "nancumsum", "nancumprod", "clip", "round", "around", "all", "any", "count_nonzero",
    # Shape functions FunctionTransformer(func=...) keeps: they return views or copies of the array.
    "ravel", "transpose", "squeeze", "atleast_1d", "atleast_2d", "asarray",
    # More that FunctionTransformer keeps (fp hunt, 2026-12-03): they compute on arrays, read and write no file and
    # call no function they are given.
    "atleast_3d", "asanyarray", "ascontiguousarray", "array", "copy", "nan_to_num", "hstack", "vstack", "dstack",
    "column_stack", "concatenate", "stack", "reshape", "expand_dims", "diff", "ediff1d", "sort", "argsort", "where",
    # np.char's text functions (NumPy 2 pickles them as numpy.strings.*; review 55)
    "char.lower", "char.upper", "char.strip", "char.lstrip", "char.rstrip", "char.title", "char.capitalize",
    "char.replace", "char.zfill", "char.str_len",
    "real", "imag", "fix", "sinc", "interp", "digitize", "flip", "fliplr", "flipud", "ones_like", "zeros_like",
    "full_like", "diag", "dot", "outer", "isclose", "gradient", "unique", "histogram", "tile", "repeat",
    "linalg.norm", "fft.fft", "fft.ifft", "fft.rfft", "fft.irfft",
]  # fmt: skip
# str methods text pipelines keep as values (CountVectorizer(preprocessor=str.lower), tokenizer=str.split); pickle
# writes them as getattr(str, "lower"), which wscan judges as the name `builtins.str.lower`. Values only: called
# while loading they are still unknown.
STR_METHODS = [
    "lower", "upper", "casefold", "title", "capitalize", "swapcase", "strip", "lstrip", "rstrip", "split", "rsplit",
    "splitlines", "isalpha", "isdigit", "isnumeric", "isalnum", "isspace", "islower", "isupper",
]  # fmt: skip

# scikit-learn functions that estimators keep as parameters or fitted attributes, found by pickling real
# estimators (tests/test_benign_real.py keeps them honest): k-means' inner loops.
SKLEARN_FUNCTIONS = ["sklearn.cluster._kmeans._kmeans_single_lloyd", "sklearn.cluster._kmeans._kmeans_single_elkan"]
# HistGradientBoosting with categorical features keeps functools.partial(check_array, ...): a partial calls its
# function, so this one is an allowed callable (it validates and converts an array).
SKLEARN_CALLED_FUNCTIONS = ["sklearn.utils.validation.check_array"]
# Modules whose public functions are scores, metrics and kernels: what `scoring=`, `score_func=`, `metric=` and
# fitted scorers hold. They compute on arrays; none reads or writes files.
SKLEARN_FUNCTION_MODULES = [
    "sklearn.metrics", "sklearn.metrics.pairwise", "sklearn.metrics.cluster", "sklearn.feature_selection",
    "sklearn.preprocessing",  # normalize, scale, minmax_scale, ...: FunctionTransformer keeps them (review 55)
]
# Score functions of sklearn.feature_selection (its other public names are classes).
SKLEARN_SCORE_FUNCTIONS = {
    "chi2", "f_classif", "f_oneway", "f_regression", "r_regression", "mutual_info_classif", "mutual_info_regression",
}
# SplineTransformer keeps SciPy B-splines; their coefficients go through array-api-compat's asarray.
SCIPY_CLASSES = ["scipy.interpolate._bsplines.BSpline"]
# SciPy's array functions FunctionTransformer keeps (fp hunt, 2026-12-03), by every module name SciPy versions pickle
# them under.
SCIPY_SPECIAL_FUNCTIONS = ["expit", "logit", "erf", "erfc", "boxcox", "boxcox1p", "inv_boxcox", "inv_boxcox1p"]
SCIPY_FUNCTIONS = [
    "scipy._lib.array_api_compat.numpy._aliases.asarray",
    "scipy.special._logsumexp.softmax", "scipy.special._logsumexp.log_softmax", "scipy.stats._stats_py.zscore",
    "scipy.stats._stats_py.rankdata", "scipy.stats._morestats.boxcox", "scipy.stats._morestats.yeojohnson",
    *(f"scipy.special.{module}{name}" for module in ("", "_ufuncs.", "_special_ufuncs.")
      for name in SCIPY_SPECIAL_FUNCTIONS),
    # Distance functions a neighbours model keeps as its metric (KNeighborsClassifier(metric=distance.cosine), review
    # 50): called on two vectors when it predicts.
    *(f"scipy.spatial.distance.{name}" for name in (
        "braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine", "dice", "euclidean", "hamming",
        "jaccard", "jensenshannon", "mahalanobis", "minkowski", "rogerstanimoto", "russellrao", "seuclidean",
        "sokalsneath", "sqeuclidean", "yule",
    )),
]  # fmt: skip
# Classes that do something on load, so a pickle must not get them for free: ScoringMonitor connects to the
# address in its state (multiprocessing Client) when unpickled and opens a listener when made. pickle.yaml lists
# them as dangerous.
SKLEARN_EXCLUDED = {
    "sklearn.callback._scoring_monitor.ScoringMonitor", "sklearn.callback._transport.ListenerHandle",
    # Called, they run what their state holds: a task list, a wrapped function, an estimator's score method on data
    # of its state (reviews chained Parallel and the validation callback so). No model keeps one.
    "sklearn.utils.parallel.Parallel", "sklearn.utils.parallel._FuncWrapper",
    "sklearn.linear_model._stochastic_gradient._ValidationScoreCallback",
    "sklearn.linear_model._logistic._LbfgsCallbackBridge",
}

# Fit-time callbacks: progress bars and monitors that talk to other processes (a review's progress bar connected to
# an address and unpickled the reply). A fitted model keeps none.
SKLEARN_EXCLUDED_PACKAGES = ("sklearn.callback.",)

# scikit-learn-compatible libraries whose estimators sit in ordinary pipelines. Their classes are allowed as
# state-only: real files restore them with cls.__new__ and BUILD (copyreg), never call them. Each class is screened
# for the hooks loading can run (LOAD_HOOKS); one that defines a hook in its own code is left out unless
# REVIEWED_HOOKS says why that hook is harmless.
SKLEARN_ECOSYSTEM = ["imblearn", "category_encoders"]
LOAD_HOOKS = (
    "__new__", "__setstate__", "__setattr__", "__getattr__", "__getattribute__", "__del__", "__hash__", "__eq__",
    "__setitem__", "extend", "append", "add",
)  # fmt: skip
REVIEWED_HOOKS = {
    # dataclasses: the generated __eq__/__hash__ compare fields
    "imblearn.utils._tags.InputTags": "dataclass",
    "imblearn.utils._tags.SamplerTags": "dataclass",
    "imblearn.utils._tags.Tags": "dataclass",
    "category_encoders.utils.EncoderTags": "dataclass",
    # a NamedTuple: __new__ is tuple's
    "category_encoders._contrasts.ContrastMatrix": "NamedTuple",
    # an Enum: pickle calls the class with the member's value, which looks the member up
    "category_encoders.utils.EncodingRelation": "Enum",
    # gensim: Dictionary's __eq__ is Mapping's (compares items); a KeyedVectors' __setitem__ (SETITEMS on one) adds
    # vectors with NumPy, nothing else
    "gensim.corpora.dictionary.Dictionary": "Mapping",
    "gensim.models.keyedvectors.KeyedVectors": "add_vectors",
    "gensim.models.fasttext.FastTextKeyedVectors": "add_vectors",
    "gensim.models.poincare.PoincareKeyedVectors": "add_vectors",
    "gensim.models.ensemblelda.Topic": "dataclass",  # EnsembleLda's clustering records: fields compared, unhashable
    "gensim.models.ensemblelda.Cluster": "dataclass",
    # gensim 3's names of the same two classes (GENSIM_LEGACY)
    "gensim.models.keyedvectors.EuclideanKeyedVectors": "add_vectors",
    "gensim.models.keyedvectors.Word2VecKeyedVectors": "add_vectors",
    "gensim.models.keyedvectors.FastTextKeyedVectors": "add_vectors",
    "gensim.models.rpmodel.RpModel": "__setstate__ sets __dict__ and a flag",
    # optuna: __setstate__ updates __dict__ and makes a fresh lock; __eq__/__hash__ compare and hash the fields;
    # NamedTuples
    "optuna.study.study.Study": "__setstate__: __dict__ and a thread-local",
    "optuna.storages._in_memory.InMemoryStorage": "__setstate__: __dict__ and a lock",
    "optuna.distributions.BaseDistribution": "fields",
    "optuna.distributions.CategoricalDistribution": "fields",
    "optuna.distributions.DiscreteUniformDistribution": "fields",
    "optuna.distributions.FloatDistribution": "fields",
    "optuna.distributions.IntDistribution": "fields",
    "optuna.distributions.IntLogUniformDistribution": "fields",
    "optuna.distributions.IntUniformDistribution": "fields",
    "optuna.distributions.LogUniformDistribution": "fields",
    "optuna.distributions.UniformDistribution": "fields",
    "optuna.trial._frozen.FrozenTrial": "fields",
    "optuna.study._frozen.FrozenStudy": "fields",
    "optuna.study._study_summary.StudySummary": "fields",
    "optuna.samplers._tpe.parzen_estimator._ParzenEstimatorParameters": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._BatchedCategoricalDistributions": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._BatchedDiscreteTruncLogNormDistributions": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._BatchedDiscreteTruncNormDistributions": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._BatchedTruncLogNormDistributions": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._BatchedTruncNormDistributions": "NamedTuple",
    "optuna.samplers._tpe.probability_distributions._MixtureOfProductDistribution": "NamedTuple",
}
# optuna's documented way to keep an in-memory study is joblib.dump(study). Storages other than the in-memory one
# connect to databases, Redis or gRPC servers, or read and write the journal file their state names; artifact
# stores hold cloud clients: those subpackages are left out, and the in-memory storage is added by hand. So is the
# CMA-ES sampler: it unpickles the hex string a trial's system attributes hold when the study is resumed (proved in
# tests/test_library_gadgets.py).
OPTUNA_SKIP = (
    "optuna.storages", "optuna.artifacts", "optuna.testing", "optuna.visualization", "optuna.cli", "optuna._gp",
    "optuna.dashboard", "optuna.integration", "optuna.samplers._cmaes",
)  # fmt: skip
OPTUNA_STORAGE = ["optuna.storages._in_memory.InMemoryStorage", "optuna.storages._in_memory._StudyInfo"]
# State-only classes real files also keep as values (`value-classes`, which WS-PKL-022 lets pass): optuna's
# TPESampler keeps its estimator factory, which computes a mixture from the observations it is given.
OPTUNA_VALUE_CLASSES = ["optuna.samplers._tpe.parzen_estimator._ParzenEstimator"]
# Functions optuna's samplers keep as defaults (TPE's gamma and weights, the GP sampler's prior).
OPTUNA_FUNCTIONS = [
    "optuna.samplers._tpe.sampler.default_gamma", "optuna.samplers._tpe.sampler.default_weights",
    "optuna.samplers._tpe.sampler.hyperopt_default_gamma", "optuna._gp.prior.default_log_prior",
]  # fmt: skip
# gensim's SaveLoad.save pickles the model (its arrays beside it as .npy files, read back with allow_pickle off).
# The pack is what the pickles of tests/helpers/gensim_models.py import, not every class gensim defines: gensim
# also defines corpus readers whose constructor unpickles (IndexedCorpus), reads or fetches (smart_open takes URLs)
# the path it is given, and a review proved that any allowed class can be made to run from a loaded object (kept
# under a method's name); WS-PKL-022 flags these classes kept as values. Its models keep a few functions as
# attributes (TfidfModel's weighting functions, `load` replaced by call_on_class_only, which raises, Word2Vec's
# hashfxn, builtins.hash, Phrases' scorers): values only.
GENSIM_FUNCTIONS = ["builtins.hash"]
# Names gensim 3 (and before) wrote that gensim 4 keeps so old models still load: aliases of recorded classes and
# empty load-compatibility classes (gensim's own test data, models saved by gensim 0.12 to 3.8, found by a sweep of
# files shipped on PyPI). Screened like the recorded ones.
GENSIM_LEGACY = [
    "gensim.models.keyedvectors.EuclideanKeyedVectors", "gensim.models.keyedvectors.Word2VecKeyedVectors",
    "gensim.models.keyedvectors.FastTextKeyedVectors", "gensim.models.phrases.Phraser",
    "gensim.models.keyedvectors.Vocab", "gensim.models.word2vec.Vocab", "gensim.models.word2vec.Word2VecVocab",
    "gensim.models.word2vec.Word2VecTrainables", "gensim.models.fasttext.FastTextVocab",
    "gensim.models.fasttext.FastTextTrainables",
]  # fmt: skip
GENSIM_LEGACY_FUNCTIONS = ["gensim.models.tfidfmodel.smartirs_normalize"]  # gensim 3's TfidfModel kept it, as a value
# Base classes whose hooks were reviewed with their own packs (BaseEstimator.__setstate__ checks the version and
# updates __dict__; ABCMeta and enum are the standard library).
REVIEWED_BASES = ("sklearn.", "abc", "builtins", "enum", "typing")
# Metaclasses reviewed for what they change of their classes (a metaclass's __call__ runs when pickle calls a class).
REVIEWED_METACLASSES: dict[str, str] = {}
# Hooks reviewed where they are defined, for every class that inherits them (REVIEWED_HOOKS is per class).
_MODULE = "torch.nn's layers restore through it too (allow-torch)"
REVIEWED_OWNER_HOOKS = {
    # A transformers config maps its legacy attribute names (n_embd -> hidden_size) through the class's
    # attribute_map, and compares configs by their dicts. A state that brings its own attribute_map would alias a
    # method to another attribute (WS-PKL-040).
    "__setattr__ of transformers.configuration_utils.PretrainedConfig": "renames by the class's attribute_map",
    "__getattribute__ of transformers.configuration_utils.PretrainedConfig": "renames by the class's attribute_map",
    "__eq__ of transformers.configuration_utils.PretrainedConfig": "compares the dicts",
    "__hash__ of transformers.configuration_utils.PretrainedConfig": "None: __eq__ is defined",
    # The watermarking configs a GenerationConfig holds are dataclasses: their __eq__ is the one dataclass writes.
    **{f"__eq__ of transformers.generation.configuration_utils.{name}": "the dataclass's: compares the fields"
       for name in ("WatermarkingConfig", "SynthIDTextWatermarkingConfig")},
    # Three multimodal configs reach their parts: Qwen2-VL and Qwen2.5-VL read and set a name their text_config holds
    # on it; T5Gemma sets six shared names on its encoder and decoder too. pickle looks up __setstate__ (and __dict__)
    # on the instance before filling its dict: only a second BUILD, after the first gave it a text_config, reaches
    # that part, and what it finds there is the part's own state, judged as any state (a method's name in it,
    # WS-PKL-026; a second BUILD, WS-PKL-018). After loading, the Qwen configs return the part's values for the
    # names it holds: scanners/pickled_config.py reads them as the parent's, and a part that is no config it reads
    # is WS-PKL-042 (review 34). The real loader's behaviour is in test_library_gadgets.
    **{f"{hook} of transformers.models.{name}": "forwards names to its parts" for hook, name in (
        ("__setattr__", "qwen2_vl.configuration_qwen2_vl.Qwen2VLConfig"),
        ("__getattribute__", "qwen2_vl.configuration_qwen2_vl.Qwen2VLConfig"),
        ("__setattr__", "qwen2_5_vl.configuration_qwen2_5_vl.Qwen2_5_VLConfig"),
        ("__getattribute__", "qwen2_5_vl.configuration_qwen2_5_vl.Qwen2_5_VLConfig"),
        ("__setattr__", "t5gemma.configuration_t5gemma.T5GemmaConfig"),
    )},
    # Every SciPy distribution execs the `_parse_arg_template` text of its state here: WS-PKL-032 checks that the
    # text is the argument parser SciPy writes from its one template.
    "__setstate__ of scipy.stats._distn_infrastructure.rv_generic": "execs the state's checked template",
    "__new__ of scipy.stats._distn_infrastructure.rv_discrete": "makes an rv_sample when given values",
    "__getattr__ of torch.nn.modules.module.Module": _MODULE,
    "__setstate__ of torch.nn.modules.module.Module": _MODULE,
    "__setattr__ of torch.nn.modules.module.Module": _MODULE,
    "__setitem__ of torch.nn.modules.container.ModuleDict": "add_module",
    "__setitem__ of torch.nn.modules.container.ModuleList": "add_module",
    "extend of torch.nn.modules.container.ModuleList": "add_module",
    "append of torch.nn.modules.container.ModuleList": "add_module",
    # __dict__.update(state), then wraps update and compute in closures that count calls; a state can shadow
    # those methods as it can any class's, with allowed callables only
    "__setstate__ of torchmetrics.metric.Metric": "dict, then wraps two methods",
    "__setattr__ of torchmetrics.metric.Metric": "refuses six constant names, else Module's",
    "__hash__ of torchmetrics.metric.Metric": "hashes its state values",
    "__eq__ of torchmetrics.metric.Metric": "builds a CompositionalMetric of torch.eq",
    "__getattr__ of torchmetrics.wrappers.classwise.ClasswiseWrapper": "reads from its metric",
    "__setattr__ of torchmetrics.wrappers.classwise.ClasswiseWrapper": "writes state names to its metric",
    "__hash__ of lightning_utilities.core.enums.StrEnum": "lower-cased value",
    "__eq__ of lightning_utilities.core.enums.StrEnum": "lower-cased value",
    "__new__ of torchmetrics.functional.regression.kendall._MetricVariant": "Enum",
    # pickle's APPENDS calls extend(items): these take (c, x, ...) and raise, or raise NotImplementedError
    "extend of scipy.interpolate._interpolate._PPolyBase": "needs two arguments, pickle passes one",
    "extend of scipy.interpolate._interpolate.BPoly": "needs two arguments, pickle passes one",
    "extend of scipy.interpolate._cubic.Akima1DInterpolator": "raises NotImplementedError",
    "__setattr__ of scipy._lib._util._RichResult": "dict.__setitem__",
    "__getattr__ of scipy._lib._util._RichResult": "self[name]",
    # given an lti instance, converts it with its own method; given nothing, object.__new__
    "__new__ of scipy.signal._ltisys.StateSpace": "picks a subclass",
    "__new__ of scipy.signal._ltisys.TransferFunction": "picks a subclass",
    "__new__ of scipy.signal._ltisys.ZerosPolesGain": "picks a subclass",
    # torch's optimizers and GradScaler (torch_training_names): the state's dict, group defaults, a numeric step made
    # a tensor
    **{f"__setstate__ of torch.optim.{name}": "dict, defaults, step as a tensor" for name in (
        "optimizer.Optimizer", "adadelta.Adadelta", "adagrad.Adagrad", "adam.Adam", "adamax.Adamax", "adamw.AdamW",
        "asgd.ASGD", "nadam.NAdam", "radam.RAdam", "rmsprop.RMSprop", "rprop.Rprop", "sgd.SGD", "Adafactor",
    )},
    "__setstate__ of torch.amp.grad_scaler.GradScaler": "dict",
}


# NumPy's scalar types, by the names NumPy 1 and NumPy 2 pickle them under (NumPy 2 names bool_ `numpy.bool`), and the
# abstract ones (np.number, np.floating: a ColumnTransformer's make_column_selector(dtype_include=np.number) keeps
# one, review 50), which cannot be instantiated.
NUMPY_SCALARS = [
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
    "float64", "longdouble", "complex64", "complex128", "clongdouble", "str_", "bytes_", "void",
    "datetime64", "timedelta64", "object_", "intc", "uintc", "longlong", "ulonglong",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating",
    "flexible", "character",
]  # fmt: skip


def ml_dtypes_names() -> list[str]:
    """ml_dtypes' scalar types (bfloat16, float8s, int4, ...), which arrays of JAX, TensorFlow and ONNX weights pickle
    as their dtype's kind: the table the pickle reader checks their descriptors against, checked against ml_dtypes."""
    import ml_dtypes
    import numpy as np

    from wscan.scanners.pickle_dtypes import ML_DTYPE_FLAGS, ML_DTYPES

    found = {
        name: np.dtype(value) for name, value in vars(ml_dtypes).items()
        if isinstance(value, type) and issubclass(value, np.generic) and value.__module__ == "ml_dtypes"
    }  # fmt: skip
    assert set(found) == set(ML_DTYPES), sorted(set(found) ^ set(ML_DTYPES))
    for name, dtype in found.items():
        assert dtype.__reduce__()[2] == (3, "<", None, None, None, *ML_DTYPES[name], ML_DTYPE_FLAGS), name
    return sorted(f"ml_dtypes.{name}" for name in found)


# Datasets saved whole (torch.save(TensorDataset(...)), random_split's Subsets; review 50): tensors, indices and
# lists of datasets, restored with cls.__new__ and their attribute dict.
TORCH_DATASETS = [
    "torch.utils.data.dataset.TensorDataset", "torch.utils.data.dataset.Subset",
    "torch.utils.data.dataset.ConcatDataset", "torch.utils.data.dataset.StackDataset",
    # and the samplers a DataLoader iterates, saved whole beside them (helper 266): no load hooks; they hold their
    # data source or sampler, sizes, weights and a torch Generator (DistributedSampler's constructor asks the process
    # group for its rank, so all are restored from state only)
    "torch.utils.data.sampler.SequentialSampler", "torch.utils.data.sampler.RandomSampler",
    "torch.utils.data.sampler.SubsetRandomSampler", "torch.utils.data.sampler.WeightedRandomSampler",
    "torch.utils.data.sampler.BatchSampler", "torch.utils.data.distributed.DistributedSampler",
]  # fmt: skip
# Values torch pickles by calling their type with their fields: a PackedSequence (a namedtuple whose __new__ checks its
# tensors) and the named tuples torch.topk, torch.sort, torch.linalg.svd, ... return (structseq types, made from a
# tuple).
TORCH_VALUE_TYPES = ["torch.nn.utils.rnn.PackedSequence"]
# A quantized layer's packed weights: TorchScript objects, pickled as torch.ScriptObject.__new__ and a BUILD of (state,
# class name), which repacks the state with that class's __setstate__. Only the shape torch writes, with the classes
# it writes, passes (`pickle_states.forged_script_object`).
TORCH_SCRIPT_OBJECT = ["torch.ScriptObject"]


def torch_return_types() -> list[str]:
    """The structseq types of torch.return_types, by the names pickle records for them."""
    import torch.return_types

    return sorted(
        f"torch.return_types.{name}" for name, value in vars(torch.return_types).items()
        if isinstance(value, type) and issubclass(value, tuple) and not name.startswith("_")
    )  # fmt: skip


# A pickled torch.Generator is Generator(device) and BUILD with its seed, offset and state tensor (set_state).
TORCH_GENERATORS = ["torch._C.Generator", "torch.Generator"]


def torch_names() -> list[str]:
    import torch._weights_only_unpickler as w

    names = set(w._get_allowed_globals())
    names.update({"torch._utils._rebuild_parameter_with_state", "torch.nn.parameter.Buffer"})
    # torch.__version__, which training scripts save beside the weights: a str subclass (fp hunt, 2026-12-03)
    names.add("torch.torch_version.TorchVersion")
    # Helpers torch.jit.load's own unpickler knows for TorchScript's data/constants/debug pickles.
    names.update(
        f"torch.jit._pickle.{n}"
        for n in ("build_intlist", "build_tensorlist", "build_doublelist", "build_boollist",
                  "build_tensor_from_id", "restore_type_tag")
    )  # fmt: skip
    return sorted(names)


# Modules that, when imported, declare more names safe for torch.load(weights_only=True) (add_safe_globals): nested
# jagged tensors (their rebuild function and the _DimRange of a dynamic dimension), DTensors with their device mesh,
# layouts, specs and placements, and torch.distributed's serialization entries. A real torch.save of such a tensor
# writes these names, and torch's own safe loader reads it.
TORCH_SAFE_GLOBAL_MODULES = (
    "torch.nested", "torch._dynamo", "torch.distributed.tensor", "torch.distributed._serialization",
    "torch.distributed.device_mesh",
)  # fmt: skip


def torch_declared_names() -> tuple[list[str], list[str]]:
    """(allowed, state-only): the names torch's own modules declare safe for its weights_only loader, which the
    maintainers reviewed as torch_names' are. Their classes are state-only even so: the safe loader would call one
    (REDUCE), and DeviceMesh's constructor starts process groups; real files restore them with cls.__new__."""
    import torch._weights_only_unpickler as w

    for module in TORCH_SAFE_GLOBAL_MODULES:
        importlib.import_module(module)
    names = sorted(name for name in w._get_user_allowed_globals() if name.startswith("torch."))
    return names, [name for name in names if isinstance(_resolve(name), type)]


# Training objects saved whole (torch.save(optimizer), a learning-rate scheduler, a GradScaler), restored with
# cls.__new__ and their attribute dict. Optimizer.__setstate__ updates __dict__, makes the hook tables the state lacks
# (Optimizer.__getstate__ drops them, so real files hold none; a state that sets one is judged as a table the library
# calls), patches the class's step for the profiler and fills in defaults; each optimizer's own __setstate__ also
# fills in group defaults and turns a numeric `step` into a tensor. GradScaler's updates __dict__ and keeps
# _refresh_per_optimizer_state as its defaultdict's factory. Schedulers define no hook; the functions a LambdaLR,
# MultiplicativeLR, CyclicLR or SWALR keeps, and the schedulers a SequentialLR or ChainedScheduler steps, are judged
# as what the library calls (CALLED_ATTRIBUTES, CALLED_TABLES, TYPED_TABLES).
TORCH_SCALERS = [
    "torch.amp.grad_scaler.GradScaler", "torch.cpu.amp.grad_scaler.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
]  # fmt: skip
# The factory of a GradScaler's per-optimizer defaultdict, called for each new optimizer: it returns a fresh dict. The
# schedule functions a CyclicLR or SWALR keeps (static methods torch pickles as getattr(Class, name), or a partial of
# one): arithmetic on numbers.
TORCH_TRAINING_FUNCTIONS = [
    "torch.amp.grad_scaler._refresh_per_optimizer_state",
    "torch.optim.lr_scheduler.CyclicLR._triangular_scale_fn", "torch.optim.lr_scheduler.CyclicLR._triangular2_scale_fn",
    "torch.optim.lr_scheduler.CyclicLR._exp_range_scale_fn", "torch.optim.swa_utils.SWALR._linear_anneal",
    "torch.optim.swa_utils.SWALR._cosine_anneal",
]  # fmt: skip


def torch_training_names() -> tuple[list[str], list[str]]:
    """(allowed, state-only): the optimizers torch.optim exports, its learning-rate schedulers and the
    gradient scalers, each screened for the hooks loading runs."""
    import torch.optim.swa_utils
    from torch.optim import lr_scheduler
    from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau
    from torch.optim.optimizer import Optimizer

    found = set(TORCH_SCALERS)
    for module in (torch.optim, lr_scheduler, torch.optim.swa_utils):
        for klass in vars(module).values():
            if isinstance(klass, type) and issubclass(klass, Optimizer | LRScheduler | ReduceLROnPlateau):
                found.add(f"{klass.__module__}.{klass.__qualname__}")
    return screened_names(sorted(found))


# A whole-model torch.save pickles each layer by its class, restored with cls.__new__ and its attribute dict (the
# __setstate__ of Module and of the few layers with their own only fill in defaults), and a DataParallel wrapper.
# Their constructors are never run by a real file: they are state-only classes (WS-PKL-014 if a pickle calls one).
# Quantized layers (torch.ao.nn: dynamic, static, intrinsic, QAT, reference, sparse; review 50) are layers too; the
# conv and sparse linear ones have a __setstate__ of their own, which sets attributes and repacks the weights it is
# given (torch's quantized prepack ops, which check them).
TORCH_LAYER_PACKAGES = ("torch.nn.modules", "torch.nn.parallel.data_parallel", "torch.optim.swa_utils", "torch.ao.nn")
# Objects layers keep beside them: the hooks weight_norm and spectral_norm register (plain objects holding a name and
# a dim) and the wrapper Module keeps for a hook registered with its module.
TORCH_LAYER_HOOKS = [
    "torch.nn.utils.weight_norm.WeightNorm", "torch.nn.utils.spectral_norm.SpectralNorm",
    "torch.nn.utils.spectral_norm.SpectralNormStateDictHook",
    "torch.nn.utils.spectral_norm.SpectralNormLoadStateDictPreHook", "torch.nn.modules.module._WrappedHook",
    # A lazy layer before its first forward (review 46) keeps the handles of the hooks it registers.
    "torch.utils.hooks.RemovableHandle",
]  # fmt: skip
# ... and its weights, not made yet: pickled as a call of the class with requires_grad (an empty tensor).
TORCH_UNMADE_WEIGHTS = ["torch.nn.parameter.UninitializedParameter", "torch.nn.parameter.UninitializedBuffer"]
# The bound methods a lazy layer registers as its own hooks, which pickle writes as getattr(<layer>, name).
LAZY_HOOK_METHODS = ("_infer_parameters", "_lazy_load_hook")


def torch_layer_names() -> list[str]:
    """Every nn.Module subclass torch.nn defines (not DistributedDataParallel, whose __setstate__ joins the
    process group, nor parametrizations, which torch.save refuses), the hooks above and the pruning methods."""
    import torch.nn
    import torch.nn.utils.prune as prune

    names = set(TORCH_LAYER_HOOKS)
    # torch.nn.utils.prune's methods, kept as forward pre-hooks of a pruned layer saved whole (review 46): a tensor
    # name and an amount, a mask; no load hooks, and their call multiplies a weight by its mask.
    names |= {f"{k.__module__}.{k.__qualname__}" for k in vars(prune).values()
              if isinstance(k, type) and issubclass(k, prune.BasePruningMethod)}  # fmt: skip
    for package in TORCH_LAYER_PACKAGES:
        root = importlib.import_module(package)
        modules = [root]
        if hasattr(root, "__path__"):
            modules += [importlib.import_module(i.name) for i in pkgutil.walk_packages(root.__path__, package + ".")]
        for module in modules:
            for _, obj in inspect.getmembers(module, inspect.isclass):
                if obj.__module__.startswith(package) and issubclass(obj, torch.nn.Module):
                    names.add(f"{obj.__module__}.{obj.__qualname__}")
    return sorted(names)


# The layers whose own __setstate__ reads a tuple by position (quantized convolutions: channels, sizes, then the weight
# and bias it repacks; sparse quantized linear packed params): fixed attribute names, so a tuple state of theirs hides
# no (name, value) pairs (WS-PKL-025).
POSITIONAL_SETSTATE = (
    "torch.ao.nn.quantized.modules.conv._ConvNd.__setstate__",
    "torch.ao.nn.sparse.quantized.linear.LinearPackedParams.__setstate__",
)  # fmt: skip


def torch_positional_state_names(layers: list[str]) -> list[str]:
    found = []
    for name in layers:
        setstate = getattr(_resolve(name), "__setstate__", None)
        if f"{getattr(setstate, '__module__', '')}.{getattr(setstate, '__qualname__', '')}" in POSITIONAL_SETSTATE:
            found.append(name)
    return sorted(found)


def torch_lazy_hook_names(layers: list[str]) -> list[str]:
    """`<layer>._infer_parameters` and `<layer>._lazy_load_hook` for every lazy layer: kept in its hook tables,
    looked up on the layer itself, never called while loading."""
    from torch.nn.modules.lazy import LazyModuleMixin

    found = []
    for name in layers:
        klass = _resolve(name)
        if isinstance(klass, type) and issubclass(klass, LazyModuleMixin):
            found += [f"{name}.{method}" for method in LAZY_HOOK_METHODS]
    return sorted(found)


def torch_distribution_names() -> tuple[list[str], list[str]]:
    """torch.distributions' distributions, constraints and transforms, which policies and probabilistic models keep
    (whole-model saves, RL checkpoints), screened like the other libraries' classes: (allowed, state-only)."""
    import torch.distributions.transforms as transforms

    reviewed = {"torch.distributions.kl._Match": "compares the types it matches"}
    for klass in vars(transforms).values():  # Transform.__eq__/__hash__: identity, type or parameter compares
        if isinstance(klass, type) and issubclass(klass, transforms.Transform):
            reviewed[f"{klass.__module__}.{klass.__qualname__}"] = "compares parameters"
    return screened_classes("torch.distributions", reviewed=reviewed)


def torch_checkpoint_names() -> list[str]:
    """What a torch.distributed.checkpoint `.metadata` pickle names (its loader reads it with plain pickle.load):
    the dataclasses and enum of torch.distributed.checkpoint.metadata and the storage record its file system
    writer keeps. They hold offsets, sizes and dtypes; none touches a file."""
    import torch.distributed.checkpoint.metadata as metadata

    names = {"torch.distributed.checkpoint.filesystem._StorageInfo"}
    for _, obj in inspect.getmembers(metadata, inspect.isclass):
        if obj.__module__ == metadata.__name__:
            names.add(f"{obj.__module__}.{obj.__qualname__}")
    return sorted(names)


def torch_function_names() -> list[str]:
    """The functions of torch.nn.functional (activations some layers keep as values, TransformerEncoderLayer's
    relu or gelu), each by the name pickle records: tensor maths, looked up and never called by a real file."""
    import pickle
    import pickletools

    import torch.nn.functional as F

    names = set()
    for attr, value in vars(F).items():
        if isinstance(value, type) or not callable(value) or attr.startswith("__"):
            continue
        module = getattr(value, "__module__", None) or ""
        if module not in ("torch.nn.functional", "torch._C._nn"):
            continue
        try:
            data = pickle.dumps(value, protocol=2)
        except Exception:
            continue
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name == "GLOBAL":
                names.add(str(arg).replace(" ", "."))
    return sorted(names)


# transformers.Trainer saves its arguments with torch.save (training_args.bin). Besides the classes named
# by the dataclass fields (walked below), __post_init__ stores these objects on the instance, and they
# are pickled with it. Exact names only.
TRAINING_ARGS_CLASSES = [
    "transformers.training_args.TrainingArguments",
    "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    # sentence-transformers' trainers (and setfit's, built on them) pickle their own subclasses into
    # training_args.bin, with its batch sampler enums (helper 266 found every such checkpoint high)
    "sentence_transformers.training_args.SentenceTransformerTrainingArguments",
    "sentence_transformers.cross_encoder.training_args.CrossEncoderTrainingArguments",
    "sentence_transformers.sparse_encoder.training_args.SparseEncoderTrainingArguments",
]
# The same classes where sentence-transformers 5.2 and later define them (read in the sources of 5.7.0 and 6.3.0, and
# recorded from their saves by helper 266): dataclasses restored from state, like the ones above, with no load hooks.
# The test extra pins 5.1, so they are listed here rather than imported.
MOVED_TRAINING_ARGS = [
    "sentence_transformers.sentence_transformer.training_args.SentenceTransformerTrainingArguments",
    "sentence_transformers.multi_vector_encoder.training_args.MultiVectorEncoderTrainingArguments",
]
MOVED_TRAINING_ARGS_ENUMS = [
    "sentence_transformers.base.sampler.BatchSamplers", "sentence_transformers.base.sampler.MultiDatasetBatchSamplers",
]
TRAINING_ARGS_POST_INIT = [
    "transformers.trainer_pt_utils.AcceleratorConfig",  # accelerator_config dict -> dataclass
    "accelerate.state.PartialState",  # distributed_state, cached by the device setup
    "accelerate.utils.dataclasses.DistributedType",  # PartialState.distributed_type
]
TRAINING_ARGS_LIBRARIES = ("transformers.", "accelerate.", "sentence_transformers.")


def _classes_in_hint(hint: object, found: set[type]) -> None:
    if typing.get_origin(hint) is not None:
        for arg in typing.get_args(hint):
            _classes_in_hint(arg, found)
    elif isinstance(hint, type):
        found.add(hint)


def training_args_names() -> list[str]:
    """TrainingArguments classes, the enums and config classes their fields can hold, and what
    __post_init__ caches on them: everything a training_args.bin pickle names."""
    names: set[str] = set(TRAINING_ARGS_POST_INIT)
    for dotted in TRAINING_ARGS_CLASSES:
        module_name, _, class_name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        names.add(dotted)
        hints = typing.get_type_hints(cls)
        found: set[type] = set()
        for item in dataclasses.fields(cls):
            _classes_in_hint(hints[item.name], found)
        for klass in found:
            module = klass.__module__ or ""
            if module.startswith(TRAINING_ARGS_LIBRARIES) and (
                issubclass(klass, enum.Enum) or dataclasses.is_dataclass(klass) or klass.__name__.endswith("Config")
            ):
                names.add(f"{module}.{klass.__qualname__}")
    return sorted(names)


def transformers_config_names() -> list[str]:
    """Every model configuration class transformers exports, and every one that can be built with default
    arguments pickled (a composite config holds its parts' configs; GenerationConfig and the torch dtype they
    keep): what a checkpoint that saves `model.config` beside its weights names. A config is restored from state
    (cls.__new__, then BUILD fills its dict); only the classes with no load hooks of their own pass
    `screened_names` (three multimodal configs that forward names to their parts are reviewed in
    REVIEWED_OWNER_HOOKS)."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # a few default configs would look a backbone up on the Hub
    import transformers
    from transformers import PretrainedConfig

    names: set[str] = set()
    for exported in dir(transformers):
        if not exported.endswith("Config"):
            continue
        try:
            value = getattr(transformers, exported)
        except Exception:  # a config whose optional dependency is missing
            continue
        if isinstance(value, type) and issubclass(value, PretrainedConfig) and value is not PretrainedConfig:
            names.add(f"{value.__module__}.{value.__qualname__}")
            try:
                record_imports(io.BytesIO(pickle.dumps(value(), protocol=2)), names)
            except Exception:
                continue
    # The base class itself (a part some configs leave generic), and the watermarking configs a GenerationConfig
    # holds: plain numbers and text. Not CompileConfig: its `options` go to torch.compile's inductor settings when
    # generate() compiles the model, which no review has read.
    from transformers.generation import configuration_utils as generation

    for value in (PretrainedConfig, generation.WatermarkingConfig, generation.SynthIDTextWatermarkingConfig):
        names.add(f"{value.__module__}.{value.__qualname__}")
    names = {name for name in names if name.startswith("transformers.")}  # torch's dtypes are allow-torch's
    allowed, _ = screened_names(sorted(names))
    return allowed


def transformers_optimization_names() -> tuple[list[str], list[str]]:
    """(allowed, state-only): transformers' learning-rate lambdas, arithmetic on the step number that a LambdaLR saved
    whole keeps in a partial (review 46), and its Adafactor optimizer, restored from state as torch's optimizers are,
    screened for the hooks loading runs."""
    import transformers.optimization as optimization

    lambdas = sorted(f"{optimization.__name__}.{name}" for name, value in vars(optimization).items()
                     if inspect.isfunction(value) and name.startswith("_get_") and name.endswith("lambda"))  # fmt: skip
    allowed, state_only = screened_names([f"{optimization.__name__}.Adafactor"])
    return lambdas + allowed, state_only


def transformers_quantization_names() -> tuple[list[str], list[str]]:
    """(classes, enums) of transformers' quantization configs: what `model.config.quantization_config` holds once a
    quantizer set it (GPTQ, FP8, HQQ, ...), pickled with the model's config. Dataclasses, whose only load hooks are
    the generated __eq__ and __hash__ (reviewed here, class by class); restored from state only. Their enums
    (QuantizationMethod) are rebuilt by a call with the member's value. A config whose fields hold another library's
    objects (torchao's, compressed-tensors') still names those, which no pack allows."""
    module = importlib.import_module("transformers.utils.quantization_config")
    mixin = module.QuantizationConfigMixin
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]
    configs = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if issubclass(c, mixin) and c is not mixin)
    enums = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if issubclass(c, enum.Enum))
    reviewed = {
        name: "dataclass: the generated __eq__ and __hash__"
        for name in configs
        if dataclasses.is_dataclass(_resolve(name))
        and all(hook.split(" ", 1)[0] in ("__eq__", "__hash__") for hook in own_hooks(_resolve(name)))  # type: ignore[arg-type]
    }
    allowed, _ = screened_names(configs, reviewed)
    return allowed, enums


def state_only_names() -> list[str]:
    """The training_args.bin classes whose constructor acts: TrainingArguments' __post_init__ sets environment
    variables and reads the files its fields name, PartialState.__init__ binds the instance to state shared by
    the process. Real files restore them from state (cls.__new__, then BUILD); a call runs the constructor
    (WS-PKL-014). Enums are left out: pickle rebuilds every member by calling its class with the value."""
    names = []
    for dotted in training_args_names():
        module_name, _, class_name = dotted.rpartition(".")
        value = getattr(importlib.import_module(module_name), class_name)
        if not (isinstance(value, type) and issubclass(value, enum.Enum)):
            names.append(dotted)
    return names


def classes_under(package: str, skip: tuple[str, ...] = ()) -> list[str]:
    """Every class defined in `package` and its submodules, by the name pickle records."""
    names: set[str] = set()
    for module in submodules(package, lambda name: any(part in name for part in ("tests", ".conftest", *skip))):
        for _, obj in inspect.getmembers(module, inspect.isclass):
            mod = getattr(obj, "__module__", "") or ""
            if mod.startswith(package) and getattr(obj, "__qualname__", "").isidentifier():
                names.add(f"{mod}.{obj.__qualname__}")
        names.update(reduce_helpers(module))
    return sorted(names)


def _operator(name: str) -> bool:
    """SciPy's linear operators and solvers (scipy.sparse.linalg): no real file keeps one, and each calls what it
    holds (a _CustomLinearOperator its matvec, arpack's IterInv its operator and solver, from its constructor)."""
    return name.startswith("scipy.sparse.linalg.")


def reduce_helpers(module: types.ModuleType) -> list[str]:
    """Module-level functions a library's own classes name in __reduce__: Cython's generated
    `__pyx_unpickle_<Class>` (it only calls <Class>.__new__ on a subtype and sets typed fields) and
    scikit-learn's `newObj` (`cls.__new__(cls)`, like copyreg.__newobj__)."""
    found = []
    for attr, value in vars(module).items():
        if (attr.startswith("__pyx_unpickle_") or attr == "newObj") and callable(value):
            found.append(f"{module.__name__}.{attr}")
    return found


def _subclass(value: object, base: object) -> bool:
    return isinstance(value, type) and isinstance(base, type) and issubclass(value, base)


def _reviewed(klass: type) -> bool:
    return (klass.__module__ or "").startswith(REVIEWED_BASES)


def own_hooks(klass: type) -> list[str]:
    """The load hooks `klass` gets from code outside the reviewed bases. A hook copied from a reviewed base (every
    Enum's __new__ is Enum.__new__) is the base's."""
    found = []
    for hook in LOAD_HOOKS:
        owner = next((b for b in klass.__mro__ if hook in vars(b)), object)
        value = vars(owner).get(hook)
        described = f"{hook} of {owner.__module__}.{owner.__qualname__}"
        inherited = any(_reviewed(b) and vars(b).get(hook) is value for b in klass.__mro__)
        if not _reviewed(owner) and not inherited and described not in REVIEWED_OWNER_HOOKS:
            found.append(described)
    metaclass = f"{type(klass).__module__}.{type(klass).__qualname__}"
    if not _reviewed(type(klass)) and metaclass not in REVIEWED_METACLASSES:
        found.append(f"metaclass {type(klass).__module__}.{type(klass).__qualname__}")
    return found


def recorded_names(
    save_models: Callable[[Path], None], package: str, functions: list[str]
) -> tuple[list[str], list[str]]:
    """(classes, functions) the pickles a catalogue's `save_models` writes (`.pkl` and `.model`-style files; not
    its arrays, word2vec binaries or torch zips) import from `package`, and the `functions` named."""
    names: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        for path in sorted(Path(folder).iterdir()):
            if path.suffix in (".npy", ".bin", ".pt", ".joblib"):
                continue  # arrays (read with allow_pickle off), word2vec's binary format; torch zips and joblib
                # dumps hold the same pickles as the catalogue's .pkl files, with arrays between opcodes
            with path.open("rb") as stream:
                record_imports(stream, names)
    classes, found = [], []
    for name in sorted(n for n in names if n.startswith(package + ".") or n in functions):
        (classes if isinstance(_resolve(name), type) else found).append(name)
    return classes, found


def reachable(root: object, depth: int) -> Iterator[object]:
    """Every object reachable from `root` (one of a generator's own saved models) through containers' items and
    objects' attribute dicts, each once, at most `depth` steps down."""
    seen: set[int] = set()  # ids of objects `root` keeps alive
    pending = [(root, 0)]
    while pending:
        obj, level = pending.pop()
        if id(obj) in seen or level > depth:
            continue
        seen.add(id(obj))
        yield obj
        if isinstance(obj, dict):
            children: list[object] = list(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            children = list(obj)
        else:
            children = list(getattr(obj, "__dict__", {}).values())
        pending.extend((child, level + 1) for child in children)


def catalogue_arguments(
    description: str, hooks: dict[str, str], owner_hooks: dict[str, str], metaclasses: dict[str, str] | None = None
) -> argparse.Namespace:
    """A recorded catalogue's command line (`--keep DIR`), with its reviewed hooks added to the screen's."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--keep", type=Path, help="also copy the catalogue's files here (for tests/data)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    REVIEWED_HOOKS.update(hooks)
    REVIEWED_OWNER_HOOKS.update(owner_hooks)
    REVIEWED_METACLASSES.update(metaclasses or {})
    return args


def screened_catalogue(names: set[str], libraries: tuple[str, ...]) -> tuple[list[str], list[str], list[str]]:
    """(allowed classes, state-only classes, functions) among the recorded `names` under `libraries`; a class the
    screen leaves out stops the generator, since a recorded catalogue's every class must be reviewed."""
    own = sorted(n for n in names if n.startswith(libraries))
    classes = [n for n in own if isinstance(_resolve(n), type)]
    allowed, state_only = screened_names(classes)
    left_out = sorted(set(classes) - set(allowed))
    if left_out:
        raise SystemExit(f"classes with hooks to review: {', '.join(left_out)}")
    return allowed, state_only, [n for n in own if n not in classes]


def _resolve(name: str) -> object:
    """The object a pickle's dotted name stands for; the name may go on past the module (`interp1d._call_spline`,
    a method a SciPy interpolator keeps as a value)."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attr in parts[split:]:
            value = getattr(value, attr)
        return value
    raise ImportError(name)


def _maybe(name: str) -> object:
    """The object a dotted name stands for, or None where this machine cannot import it (old pandas' names,
    pytorch_lightning's)."""
    try:
        return _resolve(name)
    except (ImportError, AttributeError):
        return None


def gensim_names() -> tuple[list[str], list[str]]:
    """(classes, functions) the pickles of the gensim catalogue import: gensim's own names, and builtins.hash."""
    from tests.helpers.gensim_models import save_models

    return recorded_names(save_models, "gensim", GENSIM_FUNCTIONS)


def screened_classes(
    package: str, skip: tuple[str, ...] = (), reviewed: dict[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """Classes of `package` that run nothing of their own when restored from state: (allowed, state-only). Enums
    are allowed but not state-only (pickle rebuilds a member by calling its class with the value)."""
    defined = classes_under(package, skip)  # also what the other modules import from a skipped one:
    kept = [name for name in defined if not any(part in name.rpartition(".")[0] for part in skip)]
    return screened_names(kept, reviewed)


def screened_names(names: list[str], reviewed: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """`screened_classes` for the classes named; `reviewed` adds to REVIEWED_HOOKS."""
    reviewed = REVIEWED_HOOKS | (reviewed or {})
    allowed: list[str] = []
    state_only: list[str] = []
    for name in names:
        module_name, _, qualname = name.rpartition(".")
        klass = getattr(importlib.import_module(module_name), qualname, None)
        if not isinstance(klass, type):
            continue  # a reduce helper; these libraries define none
        hooks = own_hooks(klass)
        if hooks and name not in reviewed:
            print(f"left out {name}: {', '.join(hooks)}", file=sys.stderr)
            continue
        allowed.append(name)
        if not issubclass(klass, enum.Enum):
            state_only.append(name)
    return allowed, state_only


def restored_only(names: list[str]) -> list[str]:
    """The classes among `names` that pickle restores with copyreg and BUILD: not enums (pickle calls the class with
    the value) nor classes whose own __reduce__ or __getnewargs__ has pickle call them (Cython classes, named
    tuples)."""
    hooks = ("__reduce__", "__reduce_ex__", "__getnewargs__", "__getnewargs_ex__")
    found = []
    for name in names:
        klass = _resolve(name)
        if not isinstance(klass, type) or issubclass(klass, enum.Enum):
            continue
        if not any(hook in vars(base) for base in klass.__mro__[:-1] for hook in hooks):
            found.append(name)
    return found


def numpy_function_names() -> list[str]:
    """Every ufunc in the numpy namespace (elementwise maths, pickled by name) and the reductions above, each by
    the name pickle records for it."""
    import numpy as np

    names = {f"numpy.{value.__name__}" for value in vars(np).values() if isinstance(value, np.ufunc)}
    for name in NUMPY_FUNCTIONS:
        func: object = np
        for part in name.split("."):
            func = getattr(func, part)
        names.add(f"{func.__module__}.{func.__name__}")  # type: ignore[attr-defined]
    return sorted(names)


# Builtins FunctionTransformer and friends keep as values (review 55): they compute on what they are given.
PLAIN_BUILTINS = ["abs", "len", "round", "min", "max", "sum"]


def math_function_names() -> list[str]:
    """The math module's functions, as values: arithmetic on numbers (math.log in a FunctionTransformer, review 55)."""
    import math

    return sorted(f"math.{name}" for name, value in vars(math).items() if callable(value) and not name.startswith("_"))


def sklearn_function_names() -> list[str]:
    """Public metric, scorer, kernel and score functions, by the module that defines them (what pickle records)."""
    names = set(SKLEARN_FUNCTIONS)
    for module_name in SKLEARN_FUNCTION_MODULES:
        module = importlib.import_module(module_name)
        public = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
        for attr in public:
            value = getattr(module, attr, None)
            # Only the package's own functions: these modules also import config_context (which sets global
            # configuration) and version parsers.
            if not inspect.isfunction(value) or not value.__module__.startswith(module_name.rsplit(".", 1)[0] + "."):
                continue
            if module_name == "sklearn.feature_selection" and attr not in SKLEARN_SCORE_FUNCTIONS:
                continue
            names.add(f"{value.__module__}.{value.__qualname__}")
    return sorted(names)


# Model classes transformers exports that no Auto class maps to (SDXL's CLIPTextModelWithProjection): what a model
# class is named like. transformers resolves `architectures` with getattr on itself, so an exported name needs no code.
MODEL_CLASS_NAME = re.compile(r"^[A-Z]\w*(Model|LMHeadModel|WithProjection|Encoder|Decoder|For[A-Z]\w*)$")


def architecture_names() -> list[str]:
    """Every model class transformers' Auto classes map to, and every exported one named like a model class: what
    `architectures` in config.json names."""
    import transformers

    names: set[str] = {name for name in dir(transformers) if MODEL_CLASS_NAME.match(name)}
    for module_name in ("modeling_auto", "modeling_tf_auto", "modeling_flax_auto"):
        module = importlib.import_module(f"transformers.models.auto.{module_name}")
        for attr, value in vars(module).items():
            if attr.endswith("_MAPPING_NAMES") and isinstance(value, dict):
                for entry in value.values():
                    names.update(e for e in (entry if isinstance(entry, tuple | list) else (entry,)) if e)
    return sorted(names)


# Functions real files keep as values (interp1d's _call_* methods, a metric's reductions) are
# `referenced-callables` only, never `allowed-callables`: review 56 called interp1d._call_spline(ns, x) while a file
# loaded, which calls ns._spline(x), any value the file chose, with x.
# Functions real files keep under a method's name, harmless whatever calls them: gensim replaces `load` on a saved
# model with one that raises (load is for the class), and interp1d keeps the method it evaluates with as `_call`.
INERT_FUNCTIONS = [
    "gensim.utils.call_on_class_only",
    "scipy.interpolate._interpolate.interp1d._call_linear",
    "scipy.interpolate._interpolate.interp1d._call_linear_np",
    "scipy.interpolate._interpolate.interp1d._call_nearest",
    "scipy.interpolate._interpolate.interp1d._call_previousnext",
    "scipy.interpolate._interpolate.interp1d._call_spline",
    "scipy.interpolate._interpolate.interp1d._call_nan_spline",
]
# Bound methods scikit-learn leaves in an estimator's own dict, pickled as getattr(<that estimator>, name) (review 55):
# HistGradientBoosting's early stopping with a scorer puts its own _raw_predict back so (`_patch_raw_predict`). Kept
# as values, and harmless to call: they predict with the estimator they are bound to.
SKLEARN_OWN_METHODS = [
    f"sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoosting{kind}._raw_predict"
    for kind in ("Classifier", "Regressor")
]
INERT_FUNCTIONS += SKLEARN_OWN_METHODS
# Attributes real files give a callable, named like a method of some other allowed class (the names are one set for
# all classes): scikit-learn's metadata requests keep the scorer they describe as `owner` (pathlib.Path.owner).
CALLABLE_MEMBERS = [
    "sklearn.utils._metadata_requests.MetadataRequest.owner",
    "sklearn.utils._metadata_requests.MethodMetadataRequest.owner",
    "gensim.models.tfidfmodel.TfidfModel.normalize",  # the normalization function it calls (CALLED_ATTRIBUTES)
    # A frozen SciPy distribution keeps the distribution it froze (a callable: calling one freezes it). Anywhere else a
    # distribution is no harmless stand-in for a method: a review's file put one as a config's `validate`, whose call
    # then returned quietly instead of checking.
    "scipy.stats._distn_infrastructure.rv_continuous_frozen.dist",
    "scipy.stats._distn_infrastructure.rv_discrete_frozen.dist",
    # torch's transformer layers keep the activation function they are given (fastai's losses have an `activation`)
    "torch.nn.modules.transformer.TransformerEncoderLayer.activation",
    "torch.nn.modules.transformer.TransformerDecoderLayer.activation",
]
# Attributes the libraries call by design, with arguments of their own or from the state: real files keep a named
# function there (a score function, FunctionTransformer's func, a torchmetrics metric's sync functions) or a
# partial. An object there can be one that calls what its own state holds: reviews chained torch's _WrappedHook
# (which calls its hook with the module it keeps) and scikit-learn's scorers (which call a method their state
# names on the estimator they are given) into DataFrame.eval and ndarray.tofile.
# The dict attributes whose values are called (torch's hook tables, a metric's reductions) are named in the pickle
# machine (CALLED_TABLES) and judged here under the table's name.
CALLED_ATTRIBUTES = [
    "_score_func", "func", "inverse_func", "distributed_available_fn", "dist_sync_fn", "hook", "metric",
    "effective_metric_", "importance_getter", "_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
    "_backward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks", "_reductions", "kernel", "weights", "analyzer", "preprocessor", "tokenizer",
    "score_func", "activation", "op", "transform_pred", "transform_target", "_compiled_call_impl", "strip_accents",
    "kernel_", "k1", "k2", "normalize", "wlocal", "wglobal", "pyfunc",
    # torch's optimizer hook tables (judged entry by entry, as the module's), a scheduler's functions, an averaged
    # model's averaging functions
    "_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks",
    "lr_lambdas", "_scale_fn_custom", "_scale_fn_ref", "anneal_func", "avg_fn", "multi_avg_fn",
    # gensim's EnsembleLda calls its masking method at recluster() (review 21)
    "masking_method",
]  # fmt: skip
# A weight or spectral norm hook, in a hook table or as _WrappedHook's hook (whose own hook is judged the same way);
# a torch layer as a transformer layer's activation (nn.GELU()): its call is its forward, whose state is judged.
# What scikit-learn's scorers and stacking ensembles keep as the method they call on an estimator ("auto" is resolved
# by the library itself).
RESPONSE_METHODS = ["auto", "decision_function", "predict", "predict_log_proba", "predict_proba", "score_samples",
                    "transform"]  # fmt: skip
# Tables whose values the libraries call, judged by the class of each value (WS-PKL-029): a torch module's
# submodules (every allowed torch.nn.Module subclass, found by `table_members`) and a multi-metric scorer's scorers.
TYPED_TABLES = ["_modules", "_scorers", "_schedulers", "_parameters", "_buffers"]  # and a SequentialLR's or
# ChainedScheduler's schedulers, and a module's parameters and buffers (tensors, made by torch's rebuild functions)
SCORER_CLASSES = [
    "sklearn.metrics._scorer._CurveScorer", "sklearn.metrics._scorer._PassthroughScorer",
    "sklearn.metrics._scorer._Scorer",
]  # fmt: skip
# Attributes looked up on the instance, not the class, by code that every library runs: copy and pickle.
COPY_LOOKUPS = ["__deepcopy__", "__copy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__"]


def method_lists() -> tuple[list[str], list[str]]:
    """(method names, values harmless to call), over every allowed name of every pack in rules/. A method
    is any attribute a class of the allowlist (or object) defines that an instance's own dict can hide: a
    function, a classmethod, a builtin method, a nested class, not a property (a data descriptor wins over the
    instance's dict). What cannot be called: the allowed classes whose instances define no __call__, and the
    allowed functions, which rebuild arrays, tensors and library objects (the ones real files only keep as
    values are `referenced-callables`, left out); and, as `name:<function>`, the INERT_FUNCTIONS themselves."""
    allowed = _pack_names("allowed-callables")
    referenced = _pack_names("referenced-callables")
    methods: set[str] = set(COPY_LOOKUPS) | {n for n in dir(object) if callable(getattr(object, n))}
    plain: set[str] = set()
    for name in sorted(allowed - referenced):
        try:
            value = _resolve(name)
        except (ImportError, AttributeError):
            continue  # a name of another version of its library (pathlib._local on 3.11): nothing to read
        if not isinstance(value, type):
            plain.add(name)
            continue
        if not callable_instances(value):
            plain.add(name)
        methods.update(method_names(value))
    return sorted(methods), sorted(plain | {f"name:{name}" for name in INERT_FUNCTIONS})


def callable_instances(klass: type) -> bool:
    """Whether the class's instances can be called (a __call__ of its own or a base's other than object's)."""
    return any("__call__" in vars(base) for base in klass.__mro__ if base not in (object, type))


def method_names(klass: type) -> set[str]:
    """The attributes of the class and its bases that an instance's own dict can hide: functions, classmethods,
    builtin methods, nested classes; not properties (a data descriptor wins over the instance's dict)."""
    found: set[str] = set()
    for base in klass.__mro__:
        for attr, member in vars(base).items():
            data = hasattr(type(member), "__set__") or hasattr(type(member), "__delete__")
            if not data and (callable(member) or isinstance(member, classmethod | staticmethod)):
                found.add(attr)
    return found


# The rebuild functions of torch's weights_only list (and of the nested jagged tensors its modules add).
TENSOR_REBUILDS = ("torch._utils._rebuild_", "torch._tensor._rebuild_", "torch.nested._internal.nested_tensor._rebuild")


def table_members() -> list[str]:
    """`table=class` for what real files keep in the TYPED_TABLES: every allowed class that is a torch module (torch
    layers and containers, torchmetrics metrics) in `_modules`, scikit-learn's scorers in `_scorers`, what torch's
    tensor rebuilds make in `_parameters` and `_buffers`, torch's schedulers in `_schedulers`."""
    import torch.nn
    from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

    modules, tensors, schedulers = [], [], []
    for name in sorted(_pack_names("allowed-callables")):
        try:
            value = _resolve(name)
        except (ImportError, AttributeError):
            continue
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            modules.append(f"_modules={name}")
        if isinstance(value, type) and issubclass(value, LRScheduler | ReduceLROnPlateau):
            schedulers.append(f"_schedulers={name}")
        if name.startswith(TENSOR_REBUILDS) or (isinstance(value, type) and issubclass(value, torch.Tensor)):
            tensors.append(name)
    scorers = [f"_scorers={name}" for name in SCORER_CLASSES]
    held = [f"{table}={name}" for table in ("_parameters", "_buffers") for name in tensors]
    return modules + scorers + held + schedulers


def _pack_names(list_name: str) -> set[str]:
    """Every name in `list_name` of every pack in rules/ but the generated method names."""
    names: set[str] = set()
    for path in sorted(RULES.glob("*.yaml")):
        if path.stem != "method-names":
            lists = yaml.safe_load(path.read_text(encoding="utf-8")).get("lists") or {}
            names.update(lists.get(list_name, []))
    return names


def write(name: str, description: str, entries: list[str], list_name: str = "allowed-callables",
          pack: str | None = None, more: dict[str, list[str]] | None = None) -> None:
    """One generated pack: `entries` under `list_name`, and any `more` named lists."""
    pack = pack or f"allow-{name}"
    lists = {list_name: sorted(set(entries))} | {key: sorted(set(values)) for key, values in (more or {}).items()}
    # The description ends in a newline, as the folded YAML scalar these packs used to be: same content, same
    # rules digest, so attestations made before the change still match.
    write_pack(pack, description + "\n", lists)


def main() -> int:
    numpy_names = [f"numpy.{s}" for s in NUMPY_SCALARS]
    layers = torch_layer_names()
    distributions, distributions_state_only = torch_distribution_names()
    declared, declared_state_only = torch_declared_names()
    training, training_state_only = torch_training_names()
    write(
        "torch",
        "Tensor, storage, dtype and rebuild helpers (torch's weights_only allowlist, and the names torch's modules "
        "add to it: nested jagged tensors, DTensors); torch.nn's layer classes and norm hooks, torch.distributions' "
        "classes, optimizers, learning-rate schedulers and gradient scalers, which a whole-object save restores from "
        "state only; torch.nn.functional as values only; torch.distributed.checkpoint's metadata records; random "
        "generators.",
        torch_names() + declared + layers + distributions + training + TORCH_TRAINING_FUNCTIONS
        + torch_checkpoint_names() + TORCH_GENERATORS + TORCH_UNMADE_WEIGHTS + TORCH_DATASETS + TORCH_VALUE_TYPES
        + torch_return_types() + TORCH_SCRIPT_OBJECT,
        # Layer and distribution constructors only set parameters and allocate: safe to keep as values (skorch's
        # criterion, a config's activation class), unlike the state-only classes of the other packs (WS-PKL-022).
        # So do optimizers' and learning-rate schedulers' (they store parameters and set the optimizer's rates), which
        # Lightning's save_hyperparameters, darts and skorch keep as the classes a model was given (helper 266).
        more={
            "state-only-classes": layers + distributions_state_only + declared_state_only + training_state_only
            + TORCH_DATASETS,
            "value-classes": layers + distributions_state_only
            + [name for name in training_state_only if name not in TORCH_SCALERS],
            "referenced-callables": torch_function_names() + torch_lazy_hook_names(layers),
            "positional-state-classes": torch_positional_state_names(layers),
        },
    )
    # Functions real pickles keep as values (a pooling_func, a scorer's score function) are `referenced-callables`:
    # looked up, never called, by the files that hold them. A call would run them on arguments the pickle chose,
    # and NumPy and scikit-learn functions call methods of those arguments (np.mean(x) calls x.mean()).
    write(
        "core",
        "Python containers, copyreg helpers, NumPy reconstruction (hand-picked), NumPy's and ml_dtypes' scalar types; "
        "NumPy ufuncs and reductions as values only.",
        CORE + numpy_names + ml_dtypes_names(),
        more={
            "referenced-callables": numpy_function_names() + [f"builtins.str.{m}" for m in STR_METHODS]
            + math_function_names() + [f"builtins.{name}" for name in PLAIN_BUILTINS],
            "slot-classes": SLOT_CLASSES,
        },
    )
    sklearn_classes = [
        n for n in classes_under("sklearn", skip=("externals", "_build_utils", "experimental"))
        if n not in SKLEARN_EXCLUDED and not n.startswith(SKLEARN_EXCLUDED_PACKAGES)
    ]  # fmt: skip
    write(
        "sklearn",
        "Classes defined in scikit-learn (estimators, trees, losses; not the callbacks that open connections), "
        "its metric and score functions, SciPy sparse matrices and the B-splines SplineTransformer keeps.",
        sklearn_classes
        + [n for n in classes_under("scipy.sparse") if ("._" in n or n.count(".") == 2) and not _operator(n)]
        + SCIPY_CLASSES
        + SKLEARN_CALLED_FUNCTIONS,
        # Constructors only store parameters, so kept as values they pass; but a pickle that calls one with its
        # arguments (a scorer's score function, a transformer's func) sets what WS-PKL-027 judges in a state.
        more={
            "referenced-callables": sklearn_function_names() + SCIPY_FUNCTIONS + SKLEARN_OWN_METHODS,
            "state-only-classes": restored_only(sklearn_classes),
            "value-classes": restored_only(sklearn_classes),
        },
    )
    ecosystem = [screened_classes(package) for package in SKLEARN_ECOSYSTEM]
    write(
        "sklearn-ecosystem",
        "Classes of scikit-learn-compatible libraries (imbalanced-learn, category_encoders), restored from state "
        "only; each screened for the hooks loading runs.",
        [name for allowed, _ in ecosystem for name in allowed],
        # scikit-learn-style constructors only store their parameters: safe to keep as values too (WS-PKL-022)
        more={
            "state-only-classes": [name for _, state_only in ecosystem for name in state_only],
            "value-classes": [name for _, state_only in ecosystem for name in state_only],
        },
    )
    gensim_classes, gensim_functions = gensim_names()
    gensim_allowed, gensim_state_only = screened_names(sorted(set(gensim_classes) | set(GENSIM_LEGACY)))
    gensim_functions = sorted(set(gensim_functions) | set(GENSIM_LEGACY_FUNCTIONS))
    write(
        "gensim",
        "What gensim's saved models import (word vectors, topic, phrase and similarity models, recorded from real "
        "saves): classes restored from state only, each screened for the hooks loading runs; the functions its "
        "models keep as attributes, as values only.",
        gensim_allowed + gensim_functions,  # partial(smartirs_wlocal, ...): called through the partial
        more={"state-only-classes": gensim_state_only, "referenced-callables": gensim_functions},
    )
    optuna_allowed, optuna_state_only = screened_classes("optuna", skip=OPTUNA_SKIP)
    storage_allowed, storage_state_only = screened_names(OPTUNA_STORAGE)
    write(
        "optuna",
        "Classes of optuna that an in-memory study holds (study, trials, distributions, samplers, pruners), restored "
        "from state only; each screened for the hooks loading runs. Not its database, journal, Redis or gRPC "
        "storages, nor its artifact stores. The functions its samplers keep as defaults, as values only.",
        optuna_allowed + storage_allowed,
        more={
            "state-only-classes": optuna_state_only + storage_state_only,
            "value-classes": OPTUNA_VALUE_CLASSES,
            "referenced-callables": OPTUNA_FUNCTIONS,
        },
    )
    from tests.helpers.torchmetrics_models import save_models as save_metrics

    metric_classes, metric_functions = recorded_names(save_metrics, "torchmetrics", [])
    metric_allowed, metric_state_only = screened_names(metric_classes)
    write(
        "torchmetrics",
        "What torchmetrics' metrics import when pickled or saved with a model (classification, regression, "
        "aggregation, clustering, nominal and retrieval metrics, collections and wrappers, recorded from real "
        "saves; not the metrics that wrap networks): classes restored from state only, each screened for the hooks "
        "loading runs; the reduction functions they keep, as values only.",
        metric_allowed,
        more={"state-only-classes": metric_state_only, "referenced-callables": metric_functions},
    )
    from tests.helpers.scipy_models import save_models as save_scipy

    scipy_classes, scipy_functions = recorded_names(save_scipy, "scipy", [])
    scipy_allowed, scipy_state_only = screened_names(scipy_classes)
    # A discrete distribution pickles `vecentropy`, np.vectorize of its own bound _entropy (getattr(self, "_entropy")):
    # kept as a value, called by its entropy().
    discrete = _resolve("scipy.stats._distn_infrastructure.rv_discrete")
    # Looked up on an instance the stream restored (getattr), so bound to it: never importable and callable by name,
    # where `_entropy(ns, x)` calls ns._get_support(x), any value a file chose (review 56's shape).
    scipy_methods = [f"{name}._entropy" for name in scipy_allowed if _subclass(_resolve(name), discrete)]
    # Their pickles carry slot state (BUILD sets it with setattr): the property setters it can reach (PPoly's x and
    # c, interp1d's fill_value) only convert and check arrays.
    slot_classes = [name for name in scipy_allowed if any(vars(b).get("__slots__") for b in _resolve(name).__mro__)]  # type: ignore[attr-defined]
    write(
        "scipy",
        "What fitted SciPy interpolators, splines, kernel density estimates, optimizer results, linear systems, "
        "FFT plans and distributions import (recorded from real pickles; not SciPy's spatial trees, triangulations "
        "or rotations): classes restored from state, each screened for the hooks loading runs, whose constructors "
        "only compute from arrays (a spline keeps its class as a value); a distribution's state holds code SciPy "
        "execs, judged by WS-PKL-032; the methods interp1d keeps, as values only.",
        scipy_allowed,
        # Their constructors only compute from the arrays they are given; a fitted UnivariateSpline keeps its own
        # class as `_spline_class`.
        more={
            "state-only-classes": scipy_state_only,
            "value-classes": scipy_state_only,
            "referenced-callables": scipy_functions,
            "instance-methods": scipy_methods,
            "slot-classes": slot_classes,
        },
    )
    configs = transformers_config_names()
    quantization, quantization_enums = transformers_quantization_names()
    optimization, optimization_state_only = transformers_optimization_names()
    write(
        "transformers",
        "What transformers.Trainer pickles into training_args.bin: the arguments dataclasses, the enums and "
        "config classes their fields hold, and the accelerate state cached on them; and every model configuration "
        "class and quantization config class (a checkpoint that saves model.config beside its weights), restored "
        "from state only, with the quantization enums (exact names); its learning-rate lambdas and Adafactor, which a "
        "scheduler and an optimizer saved whole hold.",
        training_args_names() + MOVED_TRAINING_ARGS + MOVED_TRAINING_ARGS_ENUMS + configs + quantization
        + quantization_enums + optimization,
        more={"state-only-classes": state_only_names() + MOVED_TRAINING_ARGS + configs + quantization
              + optimization_state_only},
    )
    methods, plain = method_lists()  # last: over every pack just written, and the hand-written ones
    # Allowed enums: calling one looks a member up, an object the whole process shares (WS-PKL-049).
    enums = sorted(name for name in _pack_names("allowed-callables") if isinstance(_maybe(name), enum.EnumMeta))
    enums = sorted({*enums, *MOVED_TRAINING_ARGS_ENUMS})
    # and a Gaussian process's kernels (a sum's k1 and k2 are kernels, judged the same way)
    kernels = [name for name in sklearn_classes if name.startswith("sklearn.gaussian_process.kernels.")]
    called_objects = ["functools.partial", *TORCH_LAYER_HOOKS, *layers, *kernels]
    write_pack(
        "method-names",
        "The names of the methods of every allowed class, and the allowed values harmless to call (objects without "
        "__call__, and name:<function> for a few functions): an object's state that sets a method's name to anything "
        "else replaces the method (WS-PKL-026); the attributes and tables libraries call, and what real files keep "
        "there (WS-PKL-027, WS-PKL-029). Generated from every "
        "allowlist in rules/, so tools/gen_tabular_allowlist.py runs first.\n",
        {"method-names": methods, "inert-values": plain, "callable-members": CALLABLE_MEMBERS,
         "called-attributes": CALLED_ATTRIBUTES, "called-attribute-objects": called_objects,
         "response-methods": RESPONSE_METHODS, "typed-tables": TYPED_TABLES, "table-members": table_members(),
         "enum-classes": enums},
    )
    write(
        "architectures",
        "Model classes transformers ships (its Auto mappings, and every exported class named like a model class): "
        "config.json architectures that need no custom code.",
        architecture_names(),
        list_name="transformers-architectures",
        pack="known-architectures",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
