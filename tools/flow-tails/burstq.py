#!/usr/bin/env python3
"""Does a round-level replay of the workload tell which flows meet pktsim's queue peaks?
From the per-flow CSV of `flowdump` (columns bq_first, bq_syn, bq_wait, bq_fct, bq_idle: the
replay of crates/polyphony-model/examples/common/replay.rs under the case's first configuration,
and each flow's replay alone).

Per rate band of one topology kind, classes with >= 100 measured flows:
  * Spearman rho, within the class, between pktsim's class queue ahead of a flow's first data
    segment at the first switch port (q_first) and the replay's (bq_first), and flowsim's
    standing-queue charge (fs - fs_noq);
  * per candidate (flowsim; the replay: ideal + replay FCT - its FCT alone; flowsim with its
    standing-queue term replaced by the replay's waits): median |error| and median signed error of
    the class p99 slowdown against pktsim, the share of pktsim's tail flows (slowdown >= its p99)
    in the candidate's top 10 %, and the spread of ln(candidate p99 / pktsim p99) around the
    band's median (median absolute deviation, as a percentage: what is left after a per-band
    bias is removed).
Standard library only: python3 burstq.py FILE [dumbbell|leaf-spine]
"""
import collections
import csv
import math
import statistics
import sys

from dumbbell import p99, spearman  # same directory


def mad(v):
    m = statistics.median(v)
    return statistics.median(abs(x - m) for x in v)


def main(path, kind="dumbbell"):
    by_class = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        if not r["regime"].startswith(kind) or float(r["bq_first"]) < 0:
            continue
        by_class[(r["case"], r["class"])].append(r)
    cands = {
        "flowsim": lambda f: float(f["fs"]),
        "replay": lambda f: float(f["ideal"]) + float(f["bq_fct"]) - float(f["bq_idle"]),
        "fs_noq + replay waits": lambda f: float(f["fs_noq"]) + float(f["bq_wait"]),
    }
    rho = collections.defaultdict(lambda: collections.defaultdict(list))
    hit = collections.defaultdict(lambda: collections.defaultdict(list))
    err = collections.defaultdict(lambda: collections.defaultdict(list))
    lr = collections.defaultdict(lambda: collections.defaultdict(list))
    for flows in by_class.values():
        if len(flows) < 100:
            continue
        band = " ".join(flows[0]["regime"].split(" ")[1:2])
        for b in (band, "all"):
            q = [float(f["q_first"]) for f in flows]
            if all(x >= 0 for x in q):
                r = [spearman(q, [float(f["bq_first"]) for f in flows])]
                r.append(spearman(q, [float(f["fs"]) - float(f["fs_noq"]) for f in flows]))
                if not any(math.isnan(x) for x in r):
                    for k, x in zip(("replay", "flowsim Q"), r):
                        rho[b][k].append(x)
            sp = [float(f["pkt"]) / float(f["ideal"]) for f in flows]
            pp = p99(sp)
            tail = [i for i, x in enumerate(sp) if x >= pp]
            for name, fct in cands.items():
                sd = [max(fct(f), 1.0) / float(f["ideal"]) for f in flows]
                cut = sorted(sd)[int(0.9 * len(sd))]
                hit[b][name].append(sum(sd[i] >= cut for i in tail) / len(tail))
                err[b][name].append((p99(sd) - pp) / pp)
                lr[b][name].append(math.log(p99(sd) / pp))
    print("| rate band | classes | rho(q_first, replay's) | rho(q_first, flowsim's Q) |")
    print("|---|---:|---:|---:|")
    for b in sorted(rho):
        r = rho[b]
        print(f"| {b} | {len(r['replay'])} | " + " | ".join(f"{statistics.median(r[k]):.2f}" for k in ("replay", "flowsim Q")) + " |")
    print()
    print("| rate band | candidate | classes | median p99 error | median signed | pktsim tail in its top 10 % | spread without the band's bias |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for b in sorted(err):
        for name in cands:
            print(f"| {b} | {name} | {len(err[b][name])} | {100 * statistics.median(abs(x) for x in err[b][name]):.1f} % | "
                  f"{100 * statistics.median(err[b][name]):+.1f} % | "
                  f"{100 * statistics.fmean(hit[b][name]):.0f} % | {100 * (math.exp(mad(lr[b][name])) - 1):.1f} % |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
