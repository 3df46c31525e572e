"""LightGBM model text and XGBoost model bytes (lightgbm_model.py, xgboost_model.py): what a pickled Booster hands
its C loader. Either reader may refuse what it is given (Malformed); any other exception is a crash."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    from wscan.scanners import lightgbm_model, xgboost_model
    from wscan.scanners.booster_common import Malformed


def one_input(data: bytes) -> None:
    try:
        if data[:1] == b"{":
            xgboost_model.check(data)
        else:
            lightgbm_model.check(data)
    except Malformed:
        return


if __name__ == "__main__":
    fuzz(one_input)
