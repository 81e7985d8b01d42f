#!/usr/bin/env bash
# Regenerates the committed evaluation studies (docs/evaluation.md), one argument per study:
#
#   scripts/studies.sh convergence-10g scale ...
#
# Every study runs the core's default parameters and the default model at the checked-out
# commit; each summary.md records the commit and the model's correction blob. Studies, with their
# wall time on the two-core development machine (2026-12-01, pktsim studies two jobs at a time):
#   convergence-10g  Table 2 at 10 Gbit/s: low/medium/high, seeds 0-4 (TUNERS, default all; 61 min)
#   ablation-10g     the ablation at 10 Gbit/s, high tightness, seeds 0-4 (TUNERS, default the
#                    ablation set; 12 min)
#   scale            the scale study, window-median (strict) SLO basis, seeds 0-2 per scenario (86 min)
#   scale-ablation   the scale study's no-trust-region ablation, as scale
#                    (no-correction is in scale; 29 min)
#   scale-run-p99    the scale study on the paper's 1 s run-p99 SLO basis, seed 0 (41 min)
#   fresh            beyond the paper: 36 cases drawn from the model's validation space (two per
#                    regime), each at a high and a low SLO set as the scale study sets them (72
#                    scenarios), seeds 0-2 (35 min)
#   convergence      Table 2 on the time-scaled 1500 us dumbbell (secondary check; 4 min)
#   adaptation       Table 3 (load shifts) on the 1500 us dumbbell (1 min)
#   categorical      categorical-bulk-tight.toml (1500 us dumbbell, 50 intervals as convergence),
#                    seeds 0-4: Polyphony and Bluefin on the mixed space, numeric-only (TUNERS; 1 min)
#   scale-ceiling    no tuner: the configurations that meet the scale SLOs most often (pktsim search;
#                    24 min)
#   scale-ceiling-refined  no tuner: the same on the WebSearch half, then a local search on
#                    pktsim for the most compliant configuration (46 min)
#   ceiling-10g      no tuner: the most often compliant and the fairest configurations at 10 Gbit/s,
#                    with a local search on pktsim for the fairest (39 min)
#   convergence-testbed  Table 2 on the namespace testbed (root, real time: 74 min), seeds 0-1
#   ablation-testbed     the ablation on the namespace testbed (root, real time: 37 min), seeds 0-2
# ITERATIONS (default per study below), JOBS (default 2), TUNERS (comma-separated) and, for
# convergence-10g, TIGHTNESS (space-separated) may be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-2}
EVAL=(cargo run --release -p polyphony-bench --bin eval --)

convergence_10g() {
    # One output directory per tightness, so each finished level is kept if a later one stops.
    local tuners=${TUNERS:-polyphony,no-trust-region,no-correction,no-model,no-denoiser,whole-space-bo,bluefin,fixed}
    for t in ${TIGHTNESS:-high medium low}; do
        "${EVAL[@]}" convergence --ground pktsim --seeds 5 --iterations "${ITERATIONS:-10}" \
            --scenario-prefix reference-10g --tightness "$t" --tuners "$tuners" --jobs "$JOBS" \
            --out "docs/results/convergence-10g/$t" --quiet
    done
}

ablation_10g() {
    "${EVAL[@]}" ablation --ground pktsim --seeds 5 --iterations "${ITERATIONS:-10}" \
        --scenario-prefix reference-10g --tuners "${TUNERS:-polyphony,no-trust-region,no-correction,no-model,no-denoiser}" \
        --jobs "$JOBS" --out docs/results/ablation-10g --quiet
}

# The scale study at the paper's size (32 x 8 leaf-spine, 50 ms windows, 10 warm-up windows):
# scale_study OUT TUNERS SEEDS EXTRA-ARGS...
scale_study() {
    local out=$1 tuners=$2 seeds=$3
    shift 3
    "${EVAL[@]}" scale --ground pktsim --seeds "$seeds" --iterations "${ITERATIONS:-10}" --warmup-windows 10 \
        --racks 32 --hosts-per-rack 8 --interval-ms 50 "$@" \
        --tuners "$tuners" --jobs "$JOBS" --out "docs/results/$out" --quiet
}

scale() { scale_study scale polyphony,no-correction,fixed,near-optimal 3 --baseline-windows 5; }
scale_ablation() { scale_study scale-ablation no-trust-region 3 --baseline-windows 5; }
scale_run_p99() {
    scale_study scale-run-p99 polyphony,fixed,near-optimal 1 --baseline-windows 20 --slo-basis run-p99
}

fresh() {
    "${EVAL[@]}" fresh --cases 36 --first-case 1000 --seeds 3 --jobs "$JOBS" --out docs/results/fresh --quiet
}

CEILING=(cargo run --release -p polyphony-bench --bin ceiling --)
scale_ceiling() { "${CEILING[@]}" scale --jobs "$JOBS" --quiet --out docs/results/scale-ceiling; }
scale_ceiling_refined() {
    "${CEILING[@]}" scale --limit 12 --refine-rounds 5 --refine-batch 8 --refine-goals compliance --jobs "$JOBS" \
        --quiet --out docs/results/scale-ceiling/websearch-refined
}
ceiling_10g() {
    "${CEILING[@]}" tightness --scenario-prefix reference-10g --fair-ranked 12 --runs 5 --refine-rounds 8 --refine-batch 8 \
        --jobs "$JOBS" --quiet \
        --out docs/results/convergence-10g/ceiling
}

convergence() {
    "${EVAL[@]}" convergence --ground pktsim --seeds 5 --iterations "${ITERATIONS:-50}" --delay-us 1500 \
        --jobs "$JOBS" --out docs/results/convergence --quiet
}

adaptation() {
    "${EVAL[@]}" adaptation --ground pktsim --seeds 3 --phase-iterations 20 --delay-us 1500 \
        --tuners polyphony,no-correction,no-model,whole-space-bo,bluefin,fixed --jobs "$JOBS" \
        --out docs/results/adaptation --quiet
}

categorical() {
    "${EVAL[@]}" categorical --ground pktsim --seeds 5 --iterations "${ITERATIONS:-50}" \
        --categorical bulk-tight --tuners "${TUNERS:-polyphony,numeric-only,bluefin}" --jobs "$JOBS" \
        --out docs/results/categorical --quiet
}

# The testbed is one instance at a time and runs in real time: no --jobs, and an otherwise idle
# machine (other load shows up as CPU stalls in its flows' completion times).
convergence_testbed() {
    "${EVAL[@]}" convergence --ground testbed --seeds 2 --iterations "${ITERATIONS:-20}" \
        --tuners "${TUNERS:-polyphony,bluefin,fixed}" --scenario-prefix testbed --prefix ppe \
        --out docs/results/convergence-testbed --quiet
}

ablation_testbed() {
    "${EVAL[@]}" ablation --ground testbed --seeds 3 --iterations "${ITERATIONS:-18}" \
        --tuners "${TUNERS:-polyphony,no-correction,no-model}" --scenario-prefix testbed --prefix ppe \
        --out docs/results/ablation-testbed --quiet
}

[ $# -gt 0 ] || { sed -n '2,31p' "$0"; exit 2; }
for study in "$@"; do
    case "$study" in
        convergence-10g) convergence_10g ;;
        ablation-10g) ablation_10g ;;
        scale) scale ;;
        scale-ablation) scale_ablation ;;
        scale-run-p99) scale_run_p99 ;;
        fresh) fresh ;;
        convergence) convergence ;;
        adaptation) adaptation ;;
        categorical) categorical ;;
        scale-ceiling) scale_ceiling ;;
        scale-ceiling-refined) scale_ceiling_refined ;;
        ceiling-10g) ceiling_10g ;;
        convergence-testbed) convergence_testbed ;;
        ablation-testbed) ablation_testbed ;;
        *) echo "studies.sh: unknown study '$study'; known: convergence-10g ablation-10g scale scale-ablation scale-run-p99 fresh convergence adaptation categorical scale-ceiling scale-ceiling-refined ceiling-10g convergence-testbed ablation-testbed" >&2; exit 2 ;;
    esac
done
