#!/usr/bin/env python3
"""How much of the corrected model's per-class p99 error is a level per (case, class) — what a
per-class calibration could remove — and how much moves with the configuration, from the
per-class CSV of

    cargo run --release -p polyphony-model --example validate -- --set dev --first F --cases N \
        --configs 8 --pktsim-cache DIR --csv FILE

For each (case, class, configuration) the corrected p99 is multiplied by exp(median of
ln(pktsim / corrected) over the same case and class's other configurations) — an idealised
calibration that never sees the row it corrects. Printed per regime and overall: the median
relative p99 error before and after.

usage: calibrated.py FILE
"""
import collections
import csv
import math
import statistics
import sys


def main(path):
    groups = collections.defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            p, c = float(r["pktsim_p99"]), float(r["corrected_p99"])
            if p > 0 and c > 0:
                groups[(r["seed"], r["class"])].append((r["regime"], p, c))
    by_regime = collections.defaultdict(lambda: ([], []))
    for rows in groups.values():
        for i, (regime, p, c) in enumerate(rows):
            others = [math.log(q / d) for j, (_, q, d) in enumerate(rows) if j != i]
            if not others:
                continue
            factor = math.exp(statistics.median(others))
            raw, cal = by_regime[regime]
            raw.append(abs(c - p) / p)
            cal.append(abs(c * factor - p) / p)
    print("| regime | class p99s | corrected | with the level of the other configurations removed |")
    print("|---|---|---|---|")
    everything = ([], [])
    for regime in sorted(by_regime):
        raw, cal = by_regime[regime]
        everything[0].extend(raw)
        everything[1].extend(cal)
        print(f"| {regime} | {len(raw)} | {100 * statistics.median(raw):.1f} % | {100 * statistics.median(cal):.1f} % |")
    raw, cal = everything
    print(f"| **all** | {len(raw)} | {100 * statistics.median(raw):.1f} % | {100 * statistics.median(cal):.1f} % |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
