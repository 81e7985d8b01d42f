#!/usr/bin/env bash
# Fuzzes every target in fuzz/ for SECONDS each (default 60) on stable Rust: libFuzzer through
# libfuzzer-sys, with the SanitizerCoverage instrumentation cargo-fuzz uses and no sanitizer
# (Rust's own checks: bounds, overflow, debug assertions). Starts from the committed corpus
# fuzz/corpus/TARGET, writes what it finds to fuzz/work/TARGET (not committed; merge by hand:
# `fuzz/target/.../TARGET -merge=1 fuzz/corpus/TARGET fuzz/work/TARGET`), crashes to
# fuzz/artifacts/TARGET/. Prints one line per target: executions, corpus size, crashes.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(workfeed_datagram daemon_config state_file scenario trace api_body)
fi
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares"
# --target keeps the instrumentation off build scripts and proc macros, as cargo-fuzz does.
cargo build --release --locked --target "$triple" --bins
bin="${CARGO_TARGET_DIR:-target}/$triple/release"
status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "artifacts/$t" "corpus/$t"
    log="work/$t.log"
    if "$bin/$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 "work/$t" "corpus/$t" >"$log" 2>&1; then
        :
    else
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "artifacts/$t" -type f | wc -l)
    units=$(find "work/$t" -type f | wc -l)
    echo "$t: ${runs:-?} executions in ${secs} s, $units new corpus entries, $crashes crash file(s) in fuzz/artifacts/$t"
done
exit $status
