#!/usr/bin/env python3
"""How much of the corrected model's ranking error (Spearman's rho of J per case) comes from class
p99s that a retransmission timeout sets in pktsim, from the per-class CSV of

    cargo run --release -p polyphony-model --example validate -- --set dev --first F --cases N \
        --configs 8 --pktsim-cache DIR --csv FILE

A class p99 counts as timeout-set when pktsim's is above 50 and more than 5 times the corrected
model's (pktsim's minimum RTO is 200 ms, thousands of ideal FCTs at >= 1 Gbit/s). Printed per
regime: how many class p99s are timeout-set, the median rho of J of the corrected model, and the
same with those class p99s replaced by pktsim's (an oracle for timeouts only). J as
polyphony_model::validation::objective (c = 10, lambda = 0.5).

usage: timeouts.py FILE
"""
import collections
import csv
import math
import sys

from dumbbell import spearman


def lse(r, c=10.0):
    m = max(r)
    return m + math.log(sum(math.exp(c * (x - m)) for x in r)) / c


def objective(r):
    mean = sum(r) / len(r)
    return lse(r) + 0.5 * sum(abs(x - mean) for x in r) / len(r)


def median(v):
    v = sorted(x for x in v if x == x)
    if not v:
        return float("nan")
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def timeout_set(row):
    p, c = float(row["pktsim_p99"]), float(row["corrected_p99"])
    return p == p and c == c and p > 50 and p > 5 * c


def main(path):
    cases = collections.defaultdict(lambda: collections.defaultdict(list))
    for row in csv.DictReader(open(path)):
        cases[(row["seed"], row["regime"])][int(row["config"])].append(row)
    rho = collections.defaultdict(lambda: ([], []))
    counts = collections.defaultdict(lambda: [0, 0])
    for (_, regime), configs in cases.items():
        j_pkt, j_cor, j_oracle = [], [], []
        for k in sorted(configs):
            def ratios(key, oracle=False):
                out = []
                for row in configs[k]:
                    v = float(row[key])
                    if oracle and timeout_set(row):
                        v = float(row["pktsim_p99"])
                    out.append((v if v == v else math.inf) / float(row["slo"]))
                return out
            for row in configs[k]:
                if row["pktsim_p99"] != "NaN":
                    for g in (regime, "**all**"):
                        counts[g][0] += timeout_set(row)
                        counts[g][1] += 1
            j_pkt.append(objective(ratios("pktsim_p99")))
            j_cor.append(objective(ratios("corrected_p99")))
            j_oracle.append(objective(ratios("corrected_p99", oracle=True)))
        for g in (regime, "**all**"):
            rho[g][0].append(spearman(j_cor, j_pkt))
            rho[g][1].append(spearman(j_oracle, j_pkt))
    print("| regime | timeout-set class p99s | median rho of J, corrected | with pktsim's timeout-set p99s |")
    print("|---|---|---|---|")
    for g in sorted(rho, key=lambda g: (g == "**all**", g)):
        n, total = counts[g]
        print(f"| {g} | {n} of {total} | {median(rho[g][0]):.2f} | {median(rho[g][1]):.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
