#!/usr/bin/env python3
"""Where flowsim's tail misses pktsim's, from the per-flow CSV of
`cargo run --release -p polyphony-model --example flowdump -- --cases N --cache DIR --out FILE`.

Per rate band of the regime (topology kind × host rate), for classes with >= 100 measured flows:
  * the median per-class p99 slowdown error of flowsim against pktsim;
  * for pktsim's tail flows (slowdown >= the class's p99): flowsim's percentile of the same flow
    (q10 / median) and the share below flowsim's 90th percentile ("missed");
  * on leaf-spines, what the tail flows' hosts offered just before the flow started: bytes each
    host started sending (or receiving) in the 20 base RTTs (at least 1 ms) before the flow's start,
    each flow counted up to that window's line-rate bytes, over the window's line-rate bytes —
    for pktsim tail flows flowsim places below its median ("missed"), the others ("caught"), and a
    5 % sample of all flows ("random"). Workload quantities only, so no model biases them.
Standard library only: python3 tails.py FILE
"""
import bisect
import collections
import csv
import math
import statistics
import sys

INTS = ("case", "class", "k", "initcwnd", "src", "dst", "start", "size", "ideal", "pkt", "fs", "rtt", "rate", "buffer")


def p99(v):
    v = sorted(v)
    return v[max(1, min(len(v), math.ceil(0.99 * len(v)))) - 1]


def main(path):
    by_case = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        for k in INTS:
            r[k] = int(r[k])
        by_case[r["case"]].append(r)
    err = collections.defaultdict(list)
    pct = collections.defaultdict(list)
    load = collections.defaultdict(lambda: collections.defaultdict(list))
    for flows in by_case.values():
        band = " ".join(flows[0]["regime"].split(" ")[:2])
        by_src, by_dst = collections.defaultdict(list), collections.defaultdict(list)
        for f in flows:
            by_src[f["src"]].append(f)
            by_dst[f["dst"]].append(f)
        rate = flows[0]["rate"] / 8e9

        def offered(group, h, t, w):
            return sum(min(o["size"], rate * w) for o in group.get(h, []) if t - w <= o["start"] <= t) / (rate * w)

        for c in {f["class"] for f in flows}:
            cf = [f for f in flows if f["class"] == c]
            if len(cf) < 100:
                continue
            sp = [f["pkt"] / f["ideal"] for f in cf]
            sf = [max(f["fs"], 1) / f["ideal"] for f in cf]
            pp, fp = p99(sp), p99(sf)
            err[band].append(abs(fp - pp) / pp)
            sorted_f = sorted(sf)
            for i, f in enumerate(cf):
                tail = sp[i] >= pp
                if tail:
                    q = bisect.bisect_left(sorted_f, sf[i]) / len(cf)
                    pct[band].append(q)
                    key = "missed" if q < 0.5 else "caught"
                elif hash((f["start"], f["src"], f["dst"])) % 20 == 0:
                    key = "random"
                else:
                    continue
                if band.startswith("leaf"):
                    w = max(1e6, 20 * f["rtt"])
                    load[band][key + ": receiver sent"].append(offered(by_src, f["dst"], f["start"], w))
                    load[band][key + ": sender sent"].append(offered(by_src, f["src"], f["start"], w))
                    load[band][key + ": receiver received"].append(offered(by_dst, f["dst"], f["start"], w))
    print("| rate band | classes | median p99 error | pktsim tail flows | flowsim percentile of them: q10 / median | below flowsim's p90 |")
    print("|---|---|---|---|---|---|")
    for b in sorted(err):
        v = sorted(pct[b])
        n = len(v)
        print(f"| {b} | {len(err[b])} | {100 * statistics.median(err[b]):.1f} % | {n} | "
              f"{v[n // 10]:.2f} / {v[n // 2]:.2f} | {100 * sum(x < 0.9 for x in v) / n:.0f} % |")
    print()
    print("| rate band | flows | offered in the window before the flow's start (mean / median, per line rate) |")
    print("|---|---|---|")
    for b in sorted(load):
        for k in sorted(load[b]):
            v = load[b][k]
            print(f"| {b} | {k} ({len(v)}) | {sum(v) / len(v):.2f} / {statistics.median(v):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
