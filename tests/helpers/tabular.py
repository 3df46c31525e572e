"""Tabular objects people pickle beside their models: pandas frames of every dtype, and XGBoost and LightGBM
models, alone and inside scikit-learn pipelines. tools/gen_tabular_allowlist.py records the names their pickles
import; tests/test_benign_real.py scans them and must find nothing."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

SEED = 7


def pandas_objects() -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    n = 4
    frame = pd.DataFrame(
        {
            "int": np.arange(n),
            "float": np.linspace(0, 1, n),
            "bool": [True, False, True, False],
            "object": ["a", 1, None, 2.5],
            "string": pd.array(["a", "b", None, "d"], dtype="string"),
            "datetime": pd.date_range("2020-01-01", periods=n, freq="D"),
            "datetime_tz": pd.date_range("2020-01-01", periods=n, freq="h", tz="UTC"),
            "timedelta": pd.to_timedelta(np.arange(n), unit="s"),
            "period": pd.period_range("2020-01", periods=n, freq="M"),
            "interval": pd.interval_range(0, n),
            "category": pd.Categorical(["x", "y", "x", "z"]),
            "Int64": pd.array([1, None, 3, 4], dtype="Int64"),
            "Float64": pd.array([1.5, None, 3.0, 4.0], dtype="Float64"),
            "boolean": pd.array([True, None, False, True], dtype="boolean"),
            "sparse": pd.arrays.SparseArray([0, 0, 1, 0]),
        }
    )
    indexes = {
        "range": pd.RangeIndex(n),
        "int": pd.Index([3, 1, 2, 0]),
        "float": pd.Index([0.5, 1.5, 2.5, 3.5]),  # pandas 1: Float64Index
        "uint": pd.Index(np.arange(n, dtype=np.uint64)),  # pandas 1: UInt64Index
        "str": pd.Index(list("abcd")),
        "datetime": pd.date_range("2021-01-01", periods=n, freq="W"),
        "timedelta": pd.timedelta_range(0, periods=n, freq="min"),
        "period": pd.period_range("2021", periods=n, freq="Y"),
        "interval": pd.interval_range(0, n),
        "category": pd.CategoricalIndex(list("abab")),
        "multi": pd.MultiIndex.from_product([[1, 2], ["u", "v"]]),
    }
    objects: dict[str, Any] = {"frame": frame, "frame-transposed": frame.T}
    for name, index in indexes.items():
        objects[f"series-{name}-index"] = pd.Series(np.arange(n), index=index, name=name)
        objects[f"index-{name}"] = index
    objects["scalars"] = [pd.Timestamp("2020-01-01", tz="Europe/Berlin"), pd.Timedelta("1h"), pd.Period("2020Q1"),
                          pd.Interval(0, 1), pd.NaT, pd.NA, pd.offsets.BDay(2), pd.offsets.MonthEnd()]  # fmt: skip
    objects["offsets"] = _offsets()
    objects["frequencies"] = _date_ranges(("D", "h", "min", "s", "ms", "us", "ns", "B", "C", "W", "MS", "ME", "BMS",
                                           "BME", "SME", "QS", "QE", "YS", "YE", "bh"))  # fmt: skip
    objects["timedelta-frequencies"] = [pd.timedelta_range(0, periods=3, freq=f) for f in ("D", "h", "s")]
    objects["masked-dtypes"] = pd.DataFrame(
        {d: pd.array([1, None], dtype=d) for d in ("Int8", "Int16", "Int32", "UInt8", "UInt16", "UInt32", "UInt64")}
        | {"Float32": pd.array([1.0, None], dtype="Float32")}
    )
    objects["dateutil-zones"] = _dateutil_zones()
    # NumPy-backed extension arrays (pandas 1 and 2 called them PandasArray) and block-kind sparse arrays (helper 232)
    numpy_backed = getattr(pd.arrays, "NumpyExtensionArray", None) or pd.arrays.PandasArray
    objects["numpy-extension-array"] = numpy_backed(np.arange(n))
    objects["sparse-block"] = pd.arrays.SparseArray([0, 0, 1, 1, 0], kind="block")
    objects["classes-as-values"] = {"types": [pd.Timestamp, pd.Timedelta, pd.Period, pd.DataFrame, pd.Series]}
    objects["grouped-stats"] = frame.groupby("category", observed=True)["float"].agg(["mean", "max"])
    objects["attrs"] = frame.assign(extra=1)
    objects["attrs"].attrs["source"] = "test"
    return objects


def _date_ranges(frequencies: tuple[str, ...]) -> list[Any]:
    """A range at each frequency, under the alias this pandas knows (pandas 1 spells month ends "M", not "ME")."""
    import pandas as pd

    ranges = []
    for frequency in frequencies:
        for alias in (frequency, frequency.removesuffix("E"), frequency.upper()):
            try:
                ranges.append(pd.date_range("2020-01-01", periods=3, freq=alias))
                break
            except ValueError:
                continue
    return ranges


def _offsets() -> list[Any]:
    """An instance of every offset pandas exports (those that need arguments, with typical ones)."""
    import pandas as pd

    needs = {"FY5253": {"weekday": 4, "startingMonth": 12, "variation": "nearest"},
             "FY5253Quarter": {"weekday": 4, "startingMonth": 12, "qtr_with_extra_week": 1, "variation": "nearest"},
             "WeekOfMonth": {"week": 1, "weekday": 2}, "LastWeekOfMonth": {"weekday": 4}}  # fmt: skip
    made = [pd.DateOffset(months=1, days=2), pd.DateOffset(weeks=1)]
    for name in sorted(dir(pd.offsets)):
        cls = getattr(pd.offsets, name)
        if isinstance(cls, type) and issubclass(cls, pd.offsets.BaseOffset) and cls is not pd.offsets.BaseOffset:
            try:
                made.append(cls(**needs.get(name, {})))
            except (TypeError, ValueError, NotImplementedError):
                continue
    return made


def _dateutil_zones() -> list[Any]:
    """Timestamps in dateutil's fixed zones (pandas' own are zoneinfo), and, from dateutil 4, in a zone read from
    its file (`tz="dateutil/Europe/Paris"`), which dateutil 4 pickles as the file's bytes (`_tzfile._unpickle`).
    dateutil 2 pickled a tzfile as a call of the class on the file's name, which opens any path it is given: left
    for the rules."""
    import dateutil
    import pandas as pd
    from dateutil import tz

    stamps = [pd.Timestamp("2020-01-01", tz=zone) for zone in (tz.tzutc(), tz.tzoffset("X", 3600), tz.tzlocal())]
    if int(dateutil.__version__.split(".")[0]) >= 4:
        with contextlib.suppress(AttributeError):  # pandas 1 cannot read dateutil 4's zones
            stamps.append(pd.Timestamp("2020-01-01", tz="dateutil/Europe/Paris"))
    return stamps


def arrow_objects() -> dict[str, Any]:
    """Frames backed by pyarrow (pandas 3 stores every string column there when pyarrow is installed), a column
    of each Arrow type pandas wraps in ArrowDtype, and the pyarrow tables and batches datasets pickles."""
    import datetime
    import decimal

    import pandas as pd
    import pyarrow as pa

    typed = {
        "int64": ([1, None], pa.int64()), "int8": ([1, None], pa.int8()), "float32": ([1.5, None], pa.float32()),
        "bool": ([True, None], pa.bool_()), "string": (["a", None], pa.string()),
        "large_string": (["a", None], pa.large_string()), "binary": ([b"a", None], pa.binary()),
        "list": ([[1, 2], None], pa.list_(pa.int64())), "struct": ([{"x": 1}, None], pa.struct([("x", pa.int64())])),
        "timestamp_tz": ([pd.Timestamp("2020-01-01"), None], pa.timestamp("us", tz="UTC")),
        "timestamp": ([pd.Timestamp("2020-01-01"), None], pa.timestamp("ns")),
        "date32": ([datetime.date(2020, 1, 1), None], pa.date32()),
        "duration": ([pd.Timedelta(1), None], pa.duration("ns")),
        "decimal": ([decimal.Decimal("1.5"), None], pa.decimal128(5, 2)),
        # common in real data, and left out until review 53 (WS-PKL-003)
        "decimal256": ([decimal.Decimal("1.5"), None], pa.decimal256(40, 2)),
        "fixed_size_binary": ([b"ab", None], pa.binary(2)),
        "dictionary": (["a", "b"], pa.dictionary(pa.int32(), pa.string())),
        # more of the nested and flat types ArrowDtype wraps (pickle_arrow checks each layout)
        "large_list": ([["a"], None], pa.large_list(pa.string())),
        "fixed_size_list": ([[1, 2], None], pa.list_(pa.int8(), 2)),
        "map": ([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
        "large_binary": ([b"a", None], pa.large_binary()), "float16": ([None, None], pa.float16()),
        "uint64": ([1, None], pa.uint64()), "date64": ([None, None], pa.date64()),
        "time64": ([None, None], pa.time64("us")), "null": ([None, None], pa.null()),
    }  # fmt: skip
    return {
        "default-strings": pd.DataFrame({"name": ["x", "y", None], "n": [1, 2, 3]}).set_index("name"),
        "arrow-dtypes": pd.DataFrame({name: pd.array(v, dtype=pd.ArrowDtype(t)) for name, (v, t) in typed.items()}),
        "string-storages": [pd.array(["a", None], dtype=f"string[{s}]") for s in ("pyarrow", "python")],
        "arrow-table": pa.table({"a": [1, 2], "b": ["x", "y"], "c": [[1], None]}),
        "arrow-batch": pa.record_batch({"a": [1, 2]}),
        "arrow-chunked": pa.chunked_array([[1, 2], [3]]),
        "arrow-scalars": [pa.scalar(1.5), pa.scalar("a"), pa.scalar(b"ab", pa.binary(2))],
    }


def boosting_objects() -> dict[str, Any]:
    import catboost as cb
    import lightgbm as lgb
    import numpy as np
    import pandas as pd
    import xgboost as xgb
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(60, 4))
    y = (x[:, 0] > 0).astype(int)
    frame = pd.DataFrame(x, columns=list("abcd")).assign(kind=pd.Categorical(rng.choice(["p", "q"], 60)))
    small = {"n_estimators": 3, "max_depth": 2}
    quiet = {**small, "verbose": -1}
    cat = {"iterations": 3, "depth": 2, "verbose": False, "allow_writing_files": False, "thread_count": 1}
    first = lgb.train({"verbose": -1}, lgb.Dataset(x, y), 3)
    with tempfile.TemporaryDirectory() as folder:  # training on from a model file keeps a predictor that owns it
        first.save_model(Path(folder) / "first.txt")
        from_file = lgb.train({"verbose": -1}, lgb.Dataset(x, y), 2, init_model=Path(folder) / "first.txt")
    return {
        "xgb-classifier": xgb.XGBClassifier(**small).fit(x, y),
        "xgb-regressor": xgb.XGBRegressor(**small).fit(x, x[:, 1]),
        "xgb-ranker": xgb.XGBRanker(**small).fit(x, y, qid=np.repeat(np.arange(6), 10)),
        "xgb-rf-classifier": xgb.XGBRFClassifier(**small).fit(x, y),
        "xgb-rf-regressor": xgb.XGBRFRegressor(**small).fit(x, x[:, 1]),
        "xgb-booster": xgb.train({"max_depth": 2}, xgb.DMatrix(x, y), 3),
        "xgb-categorical-frame": xgb.XGBClassifier(**small, enable_categorical=True).fit(frame, y),
        "xgb-in-pipeline": make_pipeline(StandardScaler(), xgb.XGBClassifier(**small)).fit(x, y),
        # XGBoost's documented early stopping: the callbacks stay in the estimator (fp hunt, 2026-12-03)
        "xgb-with-callbacks": xgb.XGBClassifier(
            **small, callbacks=[xgb.callback.EarlyStopping(rounds=2), xgb.callback.EvaluationMonitor(period=10)]
        ).fit(x, y, eval_set=[(x, y)], verbose=False),
        "lgb-classifier": lgb.LGBMClassifier(**quiet).fit(x, y),
        "lgb-regressor": lgb.LGBMRegressor(**quiet).fit(x, x[:, 1]),
        "lgb-ranker": lgb.LGBMRanker(**quiet, min_child_samples=1).fit(x, y, group=[10] * 6),
        "lgb-booster": lgb.train({"verbose": -1}, lgb.Dataset(x, y), 3),
        "lgb-categorical-frame": lgb.LGBMClassifier(**quiet).fit(frame, y),
        # trained on from another model (`init_model`): the Booster keeps an _InnerPredictor (fp hunt, 2026-12-06)
        "lgb-continued": lgb.train({"verbose": -1}, lgb.Dataset(x, y), 2, init_model=first),
        "lgb-continued-from-file": from_file,
        "lgb-classifier-continued": lgb.LGBMClassifier(**quiet).fit(x, y, init_model=first),
        "lgb-in-pipeline": make_pipeline(StandardScaler(), lgb.LGBMClassifier(**quiet)).fit(x, y),
        "cb-classifier": cb.CatBoostClassifier(**cat).fit(x, y),
        "cb-regressor": cb.CatBoostRegressor(**cat).fit(x, x[:, 1]),
        "cb-ranker": cb.CatBoostRanker(**cat).fit(x, y, group_id=np.repeat(np.arange(6), 10)),
        "cb-categorical-frame": cb.CatBoostClassifier(**cat, cat_features=["kind"]).fit(frame, y),
        "cb-with-eval-set": cb.CatBoostClassifier(**cat).fit(x[:40], y[:40], eval_set=(x[40:], y[40:])),
        "cb-in-pipeline": make_pipeline(StandardScaler(), cb.CatBoostClassifier(**cat)).fit(x, y),
        "cb-booster": cb.train(cb.Pool(x, y), {"iterations": 3, "depth": 2, "verbose": False,
                                                "allow_writing_files": False, "thread_count": 1}),
    }
