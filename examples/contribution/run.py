"""A small example contribution in the JARVIS-Leaderboard style (written for pyrepro's README).

It is never executed by `pyrepro scan`; it only shows the patterns the scanner handles.
"""
import json
import os

import numpy as np
from jarvis.db.figshare import data
from sklearn.ensemble import RandomForestRegressor

try:
    import torch  # optional: only used when present
except ImportError:
    torch = None


def train(X, y):
    import lightgbm as lgb  # imported inside a function: still required

    model = lgb.LGBMRegressor(n_estimators=100)
    return model.fit(X, y)


if __name__ == "__main__":
    rows = data("dft_3d")
    X = np.array([[len(r["atoms"]["elements"])] for r in rows])
    y = np.array([r["formation_energy_peratom"] for r in rows])
    train(X, y)
    print(json.dumps({"n": len(rows)}), RandomForestRegressor)
    os.system("zip predictions.csv.zip predictions.csv")
