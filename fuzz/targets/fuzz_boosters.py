"""LightGBM model text, XGBoost model bytes and CatBoost models (lightgbm_model.py, xgboost_model.py,
catboost_model.py): what a pickled model hands its library's loader. Each reader may refuse what it is given
(Malformed); any other exception is a crash."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    from wscan.scanners import catboost_model, lightgbm_model, xgboost_model
    from wscan.scanners.booster_common import Malformed


def one_input(data: bytes) -> None:
    try:
        if data[:1] == b"{":
            xgboost_model.check(data)
        elif data[:4] == catboost_model.MAGIC:
            catboost_model.check(data)
        else:
            lightgbm_model.check(data)
    except Malformed:
        return


if __name__ == "__main__":
    fuzz(one_input)
