#!/usr/bin/env python3
"""Every number of full-vs-no-correction.md, from docs/results/scale/iterations.csv (and scale-ablation's).

    python3 tools/scale-analysis/full_vs_no_correction.py [scale/iterations.csv [scale-ablation/iterations.csv]]

Reads only the committed files (no run; default paths under docs/results/). A proposal's prediction is the reason text of the
interval that proposed it (`ĝ = … ×÷ …`, `model calibrated per class ×a/b/c`); it is compared
with the J measured in the next interval, at the proposed configuration.
"""
import csv
import math
import re
import statistics as st
import sys
from collections import defaultdict

PATH = sys.argv[1] if len(sys.argv) > 1 else "docs/results/scale/iterations.csv"
ABLATION = sys.argv[2] if len(sys.argv) > 2 else "docs/results/scale-ablation/iterations.csv"
CLASSES = ["AF11", "AF21", "AF31"]
FULL, NC, CEIL = "polyphony", "no-correction", "near-optimal"

# The page analyses the seed-0 runs of both files.
rows = [r for r in csv.DictReader(open(PATH, encoding="utf-8")) if r["seed"] == "0"]
rows += [
    r
    for r in csv.DictReader(open(ABLATION, encoding="utf-8"))
    if r["tuner"] == "no-trust-region" and r["seed"] == "0"
]
NTR = "no-trust-region"
runs = defaultdict(list)
order = []
for r in rows:
    runs[(r["scenario"], r["tuner"])].append(r)
    if r["scenario"] not in order:
        order.append(r["scenario"])


def control(sc, tu):
    return [r for r in runs[(sc, tu)] if int(r["iteration"]) >= 0]


def max_r(r):
    return max(float(r["ratio_" + c]) for c in CLASSES)


def converged(sc, tu):
    ok = [max_r(r) <= 1.0 for r in control(sc, tu)]
    return next((t for t in range(len(ok) - 2) if all(ok[t : t + 3])), None)


def family(sc):
    return sc.split("-")[0]


def steps(sc, tu):
    """(proposing row, next row) pairs from the last warm-up window on."""
    it = [r for r in runs[(sc, tu)] if int(r["iteration"]) >= -1]
    return list(zip(it, it[1:]))


def g_hat(reason):
    m = re.search(r"ĝ = ([\d.]+) ×÷ ([\d.]+)", reason)
    return (float(m.group(1)), math.log(float(m.group(2)))) if m else None


def ranks(v):
    r = [0.0] * len(v)
    for k, i in enumerate(sorted(range(len(v)), key=lambda i: v[i])):
        r[i] = k
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = st.mean(ra), st.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return num / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


print("## cells where one of full and no-correction converges and the other does not (convergence iteration)")
for sc in order:
    f, n = converged(sc, FULL), converged(sc, NC)
    if n is not None and f is None:
        print(f"  {sc}: no-correction {n}, full never")
    if f is not None and n is None:
        print(f"  {sc}: full {f}, no-correction never")

for fam in ["websearch", "hadoop"]:
    cells = [sc for sc in order if family(sc) == fam]
    print(f"\n## {fam} ({len(cells)} scenarios)")
    for tu in [FULL, NC, NTR, CEIL]:
        it = [r for sc in cells for r in control(sc, tu)]
        ok = sum(max_r(r) <= 1.0 for r in it)
        w31 = st.median(float(r["weight_AF31"]) for r in it if int(r["iteration"]) >= 3)
        print(f"  {tu}: compliant intervals {ok}/{len(it)}; median AF31 weight, intervals 3-9: {w31:.2f}")
    # The reason names the factors at the proposal only when one is off 1 by more than 5 %.
    cal = []
    for sc in cells:
        for r in runs[(sc, FULL)]:
            if int(r["iteration"]) < -1:
                continue
            m = re.search(r"calibrated per class ×([\d.]+)/([\d.]+)/([\d.]+)", r["reason"])
            cal.append([float(x) for x in m.groups()] if m else [1.0, 1.0, 1.0])
    flat = [v for f in cal for v in f]
    print(
        f"  full's calibration factors at its proposals: {min(flat):.2f}-{max(flat):.2f}, "
        f"median per proposal of the largest |ln factor| ×{math.exp(st.median(max(abs(math.log(v)) for v in f) for f in cal)):.2f}"
    )
    worst = defaultdict(int)
    for sc in cells:
        it = [r for tu in [FULL, NC] for r in control(sc, tu) if int(r["iteration"]) >= 3]
        worst[max(CLASSES, key=lambda c: st.median(float(r["ratio_" + c]) for r in it))] += 1
    print(f"  class with the highest median ratio (full and no-correction, intervals 3-9): {dict(worst)}")
    tight = defaultdict(int)
    for sc in cells:
        r = control(sc, NC)[0]
        tight[min(CLASSES, key=lambda c: float(r["p99_" + c]) / float(r["ratio_" + c]))] += 1
    print(f"  class with the tightest SLO (p99 / ratio): {dict(tight)}")
    for tu in [FULL, NC, NTR]:
        err, pred, meas = [], [], []
        for sc in cells:
            for a, b in steps(sc, tu):
                g = g_hat(a["reason"])
                if g:
                    err.append(math.log(float(b["objective"]) / g[0]))
                    pred.append(math.log(g[0]))
                    meas.append(math.log(float(b["objective"])))
        med = st.median(err)
        print(
            f"  {tu}: measured J / predicted ĝ of its proposals: median ×{math.exp(med):.1f} "
            f"(ln {med:+.2f}, n {len(err)}); Spearman ρ(ĝ, next J) {spearman(pred, meas):.2f}"
        )
    for tu in [FULL, NC, NTR]:
        first = st.median(float(control(sc, tu)[0]["objective"]) for sc in cells)
        start = st.median(float([r for r in runs[(sc, tu)] if int(r["iteration"]) == -1][0]["objective"]) for sc in cells)
        print(f"  {tu}: median J of the last warm-up window {start:.2f}, of its first control interval {first:.2f}")

print("\n## the cells that flip: intervals 3-9, min-max")
for sc in order:
    if (converged(sc, NC) is None) != (converged(sc, FULL) is None):
        for tu in [FULL, NC]:
            it = [r for r in control(sc, tu) if int(r["iteration"]) >= 3]
            w = [float(r["weight_AF31"]) for r in it]
            k = {c: [int(r["ecn_bytes_" + c]) / 1000 for r in it] for c in CLASSES}
            ks = ", ".join(f"{c} {min(v):.0f}-{max(v):.0f}" for c, v in k.items())
            print(f"  {sc} {tu}: AF31 weight {min(w):.2f}-{max(w):.2f}; K (kB) {ks}")

print("\n## safe exploration holding the incumbent (full)")
for sc in order:
    held = [b for a, b in steps(sc, FULL) if "safe exploration" in a["reason"] and "no candidate" in a["reason"]]
    if held:
        print(f"  {sc}: re-measured J " + ", ".join(f"{float(b['objective']):.2f}" for b in held)
              + "; max r " + ", ".join(f"{max_r(b):.2f}" for b in held))
