#!/usr/bin/env python3
"""Which of flowsim's single-link terms makes its dumbbell tails wrong, from the per-flow CSV of
`cargo run --release -p polyphony-model --example flowdump -- --first 0 --cases N --stride 2 ...`
(dumbbell cases only; the columns fs_noq and fs_ps split flowsim's FCT into its terms).

flowsim's FCT = ideal + share (processor sharing, GPS, incast: fs_ps - ideal)
              + rounds ((k-1) base RTTs: fs_noq - fs_ps) + queue (k Q/rho: fs - fs_noq).
Classes with >= 100 measured flows. Tables:
  1. per-class p99 slowdown error of flowsim against pktsim (median |err| and median signed
     err), and of flowsim with a term removed or halved, by rate band x load band;
  2. the flows at and around each class's p99 rank (ranks r-2..r+2, r the nearest rank), in
     pktsim's order and in flowsim's, by size over BDP: pktsim's and flowsim's slowdown and
     flowsim's terms (in units of the ideal FCT), medians;
  3. the standing queue: pktsim's class queue (time average and maximum on the port where it is
     longest) over K;
  4. by quartile of K over the BDP (link rate x base RTT): the per-class p99 error, the share of
     classes flowsim underestimates, pktsim's maximum class queue over K + BDP, and the share of
     classes whose K is below one initial window (flowsim then charges no slow-start rounds);
  5. what the first data segment met in pktsim at the switch (columns q_first, w_first, w_syn):
     its class's queue ahead of it over K, its wait there, the SYN's wait there, and the share of
     pktsim's excess FCT (FCT - ideal) the two waits are, against flowsim's standing-queue wait per round (k Q/rho / k),
     for the flows at pktsim's p99 rank, at flowsim's and at pktsim's median;
  6. how well per-flow quantities rank pktsim's SYN + first-segment wait within a class (median
     Spearman rho over classes): flowsim's wait per round, pktsim's queue ahead, and the number of
     same-class flows that started in the last 1 or 4 base RTTs.
Standard library only: python3 dumbbell.py FILE
"""
import bisect
import collections
import csv
import math
import statistics
import sys

INTS = ("case", "class", "k", "initcwnd", "start", "size", "ideal", "pkt", "fs", "rtt", "rate", "fs_noq", "fs_ps",
        "q_avg", "q_max", "q_first", "w_first", "w_syn")
MSS = 1448
MIN_FLOWS = 100
SIZE_BINS = ("1 packet", "<= 1 BDP", "<= 8 BDP", "> 8 BDP")


def rank(n):
    return max(1, min(n, math.ceil(0.99 * n))) - 1


def p99(v):
    v = sorted(v)
    return v[rank(len(v))]


def size_bin(r):
    bdp = r["rate"] / 8 * r["rtt"] / 1e9
    if r["size"] <= MSS:
        return SIZE_BINS[0]
    if r["size"] <= bdp:
        return SIZE_BINS[1]
    if r["size"] <= 8 * bdp:
        return SIZE_BINS[2]
    return SIZE_BINS[3]


def band(regime):
    # "dumbbell 0.1G/1.5ms 20-40%" -> ("0.1G/1.5ms", "20-40%")
    _, rate, load = regime.split(" ")
    return rate, load


def med(v):
    return statistics.median(v) if v else float("nan")


def pct(x):
    return f"{100 * x:+.1f}"


def main(path):
    classes = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        for k in INTS:
            r[k] = int(float(r[k]))
        i = r["ideal"]
        r["s_pkt"] = r["pkt"] / i
        r["s_fs"] = r["fs"] / i
        r["t_share"] = (r["fs_ps"] - i) / i
        r["t_rounds"] = (r["fs_noq"] - r["fs_ps"]) / i
        r["t_queue"] = (r["fs"] - r["fs_noq"]) / i
        classes[(r["case"], r["class"])].append(r)

    variants = {
        "flowsim": lambda r: r["s_fs"],
        "- queue": lambda r: r["s_fs"] - r["t_queue"],
        "1/2 queue": lambda r: r["s_fs"] - r["t_queue"] / 2,
        "- rounds": lambda r: r["s_fs"] - r["t_rounds"],
        "- both": lambda r: r["s_fs"] - r["t_queue"] - r["t_rounds"],
        "- share": lambda r: r["s_fs"] - r["t_share"],
    }
    err = collections.defaultdict(lambda: collections.defaultdict(list))
    by_k = []
    first = collections.defaultdict(list)
    rank_by = collections.defaultdict(list)
    tail = collections.defaultdict(list)
    queue = collections.defaultdict(list)
    for flows in classes.values():
        if len(flows) < MIN_FLOWS:
            continue
        rb, lb = band(flows[0]["regime"])
        target = p99([f["s_pkt"] for f in flows])
        for name, v in variants.items():
            e = p99([v(f) for f in flows]) / target - 1
            for key in ((rb, lb), (rb, "all"), ("all", "all")):
                err[key][name].append(e)
        f0 = flows[0]
        bdp = f0["rate"] / 8 * f0["rtt"] / 1e9
        if f0["k"] > 0:
            by_k.append((f0["k"] / bdp, p99([f["s_fs"] for f in flows]) / target - 1, f0["q_max"] / (f0["k"] + bdp),
                         f0["k"] <= f0["initcwnd"] * (MSS + 66)))
        n = len(flows)
        r = rank(n)
        for order in ("s_pkt", "s_fs"):
            srt = sorted(flows, key=lambda f: f[order])
            for f in srt[max(0, r - 2):min(n, r + 3)]:
                tail[(order, rb, size_bin(f))].append(f)
                tail[(order, "all", size_bin(f))].append(f)
        seen = [f for f in flows if f["w_first"] >= 0 and f["w_syn"] >= 0]
        if f0["k"] > 0 and len(seen) >= MIN_FLOWS:
            starts = sorted(f["start"] for f in seen)
            wait = [f["w_first"] + f["w_syn"] for f in seen]

            def recent(f, m):
                return bisect.bisect_left(starts, f["start"]) - bisect.bisect_left(starts, f["start"] - m * f["rtt"])

            for name, v in (
                ("flowsim Q/rho per round", [(f["fs"] - f["fs_noq"]) / (1 + (f["fs_noq"] - f["fs_ps"]) / f["rtt"])
                                             for f in seen]),
                ("pktsim queue ahead", [f["q_first"] for f in seen]),
                ("same-class starts in the last base RTT", [recent(f, 1) for f in seen]),
                ("same-class starts in the last 4 base RTTs", [recent(f, 4) for f in seen]),
            ):
                rho = spearman(v, wait)
                if not math.isnan(rho):
                    rank_by[(name, rb)].append(rho)
                    rank_by[(name, "all")].append(rho)
        if f0["k"] > 0:
            by_pkt = sorted(flows, key=lambda f: f["s_pkt"])
            by_fs = sorted(flows, key=lambda f: f["s_fs"])
            h = n // 2
            for g, v in (("pktsim p99", by_pkt[max(0, r - 2):r + 3]), ("flowsim p99", by_fs[max(0, r - 2):r + 3]),
                         ("pktsim median", by_pkt[max(0, h - 2):h + 3])):
                for f in v:
                    if f["w_first"] >= 0 and f["w_syn"] >= 0:
                        first[(g, rb, size_bin(f))].append(f)
                        first[(g, "all", size_bin(f))].append(f)
        if f0["k"] > 0:
            q = (f0["q_avg"] / f0["k"], f0["q_max"] / f0["k"])
            queue[rb].append(q)
            queue["all"].append(q)

    print("## 1. Per-class p99 slowdown error against pktsim (median |err| % / median signed err %)\n")
    names = list(variants)
    print("| rate | load | classes | " + " | ".join(names) + " |")
    print("|---|---|---:|" + "---:|" * len(names))
    for key in sorted(err, key=lambda k: (k[0] == "all", k[0], k[1] == "all", k[1])):
        e = err[key]
        cells = [f"{100 * med([abs(x) for x in e[n]]):.1f} / {pct(med(e[n]))}" for n in names]
        print(f"| {key[0]} | {key[1]} | {len(e['flowsim'])} | " + " | ".join(cells) + " |")

    print("\n## 2. Flows at the class's p99 rank (r-2..r+2), medians in units of the ideal FCT\n")
    print("| ranked by | rate | size | flows | pktsim | flowsim | share | rounds | queue | k-1 (median) "
          "| flowsim - pktsim | flowsim Q = 0 |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for order in ("s_pkt", "s_fs"):
        for rb in sorted({k[1] for k in tail}, key=lambda x: (x == "all", x)):
            for sb in SIZE_BINS:
                v = tail.get((order, rb, sb), [])
                if not v:
                    continue
                kk = med([(f["fs_noq"] - f["fs_ps"]) / f["rtt"] for f in v])
                cells = [med([f[c] for f in v]) for c in ("s_pkt", "s_fs", "t_share", "t_rounds", "t_queue")]
                d = med([f["s_fs"] - f["s_pkt"] for f in v])
                print(f"| {'pktsim' if order == 's_pkt' else 'flowsim'} | {rb} | {sb} | {len(v)} | "
                      + " | ".join(f"{c:.2f}" for c in cells) + f" | {kk:.1f} | {d:+.2f} "
                      f"| {sum(f['fs'] == f['fs_noq'] for f in v) / len(v):.2f} |")

    print("\n## 3. pktsim's class queue over K\n")
    print("| rate | classes | time-averaged queue / K (median) | maximum queue / K (median) |")
    print("|---|---:|---:|---:|")
    for rb in sorted(queue, key=lambda x: (x == "all", x)):
        v = queue[rb]
        print(f"| {rb} | {len(v)} | {med([x[0] for x in v]):.2f} | {med([x[1] for x in v]):.2f} |")

    print("\n## 4. By quartile of K / BDP\n")
    print("| K / BDP | classes | median abs err % | median signed err % | flowsim under | "
          "pktsim max queue / (K + BDP) | K <= initcwnd |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    by_k.sort()
    n = len(by_k)
    for q in range(4):
        v = by_k[q * n // 4:(q + 1) * n // 4]
        print(f"| {v[0][0]:.3g}-{v[-1][0]:.3g} | {len(v)} | {100 * med([abs(x[1]) for x in v]):.1f} "
              f"| {pct(med([x[1] for x in v]))} | {sum(x[1] < 0 for x in v) / len(v):.2f} "
              f"| {med([x[2] for x in v]):.2f} | {sum(x[3] for x in v) / len(v):.2f} |")

    print("\n## 5. The first data segment at the switch (pktsim) against flowsim's wait per round\n")
    print("Medians; waits and excess in units of the ideal FCT.\n")
    print("| flows | rate | size | n | pktsim queue ahead / K | pktsim wait | SYN wait "
          "| both / pktsim excess | flowsim Q/rho per round | pktsim excess | flowsim excess |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g in ("pktsim p99", "flowsim p99", "pktsim median"):
        for rb in sorted({k[1] for k in first}, key=lambda x: (x == "all", x)):
            for sb in SIZE_BINS:
                v = first.get((g, rb, sb), [])
                if not v:
                    continue
                ex = [f["pkt"] - f["ideal"] for f in v]
                cells = (
                    med([f["q_first"] / f["k"] for f in v]),
                    med([f["w_first"] / f["ideal"] for f in v]),
                    med([f["w_syn"] / f["ideal"] for f in v]),
                    med([(f["w_first"] + f["w_syn"]) / e for f, e in zip(v, ex) if e > 0]),
                    med([(f["fs"] - f["fs_noq"]) / (1 + (f["fs_noq"] - f["fs_ps"]) / f["rtt"]) / f["ideal"] for f in v]),
                    med([e / f["ideal"] for f, e in zip(v, ex)]),
                    med([f["s_fs"] - 1 for f in v]),
                )
                print(f"| {g} | {rb} | {sb} | {len(v)} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")

    print("\n## 6. Ranking pktsim's SYN + first-segment wait within a class (median Spearman rho)\n")
    bands = sorted({k[1] for k in rank_by}, key=lambda x: (x == "all", x))
    print("| predictor | " + " | ".join(bands) + " |")
    print("|---|" + "---:|" * len(bands))
    for name in dict.fromkeys(k[0] for k in rank_by):
        print(f"| {name} | " + " | ".join(f"{med(rank_by[(name, b)]):.2f}" for b in bands) + " |")


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den > 0 else float("nan")


def ranks(v):
    """Average ranks (ties share their mean rank)."""
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for t in range(i, j + 1):
            r[order[t]] = (i + j) / 2
        i = j + 1
    return r


if __name__ == "__main__":
    main(sys.argv[1])
