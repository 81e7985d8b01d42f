#!/usr/bin/env bash
# The project's one test command (README.md names it; .ci/run calls it).
#
# On a fresh Debian machine, run as root: it installs what the tests need (clang and bpftool
# for the eBPF programs, iproute2 and ethtool for the namespace testbed, openssh-server for the
# switch-CLI transport test, prometheus for the scrape test, nfdump for the IPFIX export test,
# nats-server for the JetStream test),
# then checks formatting and lints and runs every test of the workspace. Tests that need root, namespaces or eBPF run when this
# script runs as root and are skipped, saying so, otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(clang llvm libbpf-dev bpftool iproute2 ethtool openssh-server openssh-client prometheus nfdump nats-server procps util-linux fonts-dejavu-core)

if [ "$(id -u)" = 0 ]; then
    missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "==> installing: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
else
    echo "==> not root: packages not installed, and root-only tests will be skipped"
fi

echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo clippy (-D warnings)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "==> cargo test"
cargo test --workspace --locked
