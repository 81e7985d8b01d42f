#!/usr/bin/env python3
"""Cross-validates LightGBM on the correction's samples, to tell the learner's limit from the inputs'.

Reads the CSV that `train_correction --dump FILE` writes (case, regime, pktsim's flows, flowsim's
p99, target ln(p99_pktsim / p99_flowsim), the crate's features), folds by case exactly as
`train_correction --cv 5` does (fold = (case / 18) mod 5), and prints for each LightGBM setting the
median per-class p99 error |exp(prediction - target) - 1| (prediction clamped to +-3 as the crate
clamps its factor) and the worst regime's median. Not part of the build: it needs Python 3 with
`pip install lightgbm numpy` (measured with LightGBM 4.7.0, NumPy 2.4.6).

    cargo run --release -p polyphony-model --example train_correction -- --first 0 --cases 1296 \
        --configs 4 --threads 2 --pktsim-cache DIR --dump samples.csv
    python3 tools/gbdt-cv/lightgbm_cv.py samples.csv
"""
import argparse
import csv

import lightgbm as lgb
import numpy as np

# (name, parameters beyond the L1 objective, boosting rounds)
SETTINGS = [
    ("depth 7, 400 trees, shrinkage 0.05, min leaf 20 (the shipped forest's)",
     dict(max_depth=7, num_leaves=128, learning_rate=0.05, min_data_in_leaf=20), 400),
    ("depth 7, 1000 trees, shrinkage 0.05",
     dict(max_depth=7, num_leaves=128, learning_rate=0.05, min_data_in_leaf=20), 1000),
    ("63 leaves, 1000 trees, shrinkage 0.03, 70 % features, 80 % bagging",
     dict(num_leaves=63, learning_rate=0.03, min_data_in_leaf=20, feature_fraction=0.7,
          bagging_fraction=0.8, bagging_freq=1), 1000),
    ("255 leaves, 800 trees, shrinkage 0.03, min leaf 10, 70 % features",
     dict(num_leaves=255, learning_rate=0.03, min_data_in_leaf=10, feature_fraction=0.7), 800),
    ("Huber (0.3), depth 7, 600 trees",
     dict(objective="huber", alpha=0.3, max_depth=7, num_leaves=128, learning_rate=0.05,
          min_data_in_leaf=20), 600),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("samples", help="CSV written by train_correction --dump")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    with open(a.samples, newline="") as f:
        r = csv.reader(f)
        next(r)
        rows = list(r)
    if not rows:
        raise SystemExit(f"{a.samples}: no samples")
    case = np.array([int(x[0]) for x in rows])
    regime = np.array([x[1] for x in rows])
    y = np.array([float(x[4]) for x in rows])
    x = np.array([[float(v) for v in row[5:]] for row in rows], dtype=np.float32)
    fold = (case // 18) % a.folds
    base = dict(objective="l1", verbosity=-1, num_threads=a.threads, seed=1, deterministic=True)
    print(f"{len(y)} class samples from {len(set(case))} cases, {a.folds}-fold by case")
    for name, extra, rounds in SETTINGS:
        p = dict(base)
        p.update(extra)
        err = np.zeros(len(y))
        for k in range(a.folds):
            tr, te = fold != k, fold == k
            m = lgb.train(p, lgb.Dataset(x[tr], y[tr]), rounds)
            err[te] = np.abs(np.exp(np.clip(m.predict(x[te]), -3, 3) - y[te]) - 1)
        worst = max(np.median(err[regime == g]) for g in set(regime))
        print(f"{name}: median {np.median(err) * 100:.1f} %, worst regime {worst * 100:.1f} %", flush=True)


if __name__ == "__main__":
    main()
