#!/usr/bin/env bash
# Builds the ns-3 replay program (bench/ns3/replay.cc) against Debian bookworm's ns-3.37.
# Installs libns3-dev and g++ when missing (needs root and network for apt-get). Not part of the
# Rust build. Usage: bench/ns3/build.sh [OUTPUT]   (default: target/ns3/polyphony-ns3-replay)
#
# ns-3.37's pkg-config files are broken on Debian (they require libgsl-dev and emit a bogus
# include path), so the program is linked by hand against the modules it uses.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/ns3/polyphony-ns3-replay}"
if ! [ -e /usr/include/ns3/core-module.h ] || ! command -v g++ >/dev/null; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y libns3-dev g++
fi
mkdir -p "$(dirname "$out")"
g++ -std=c++17 -O2 -o "$out" "$here/replay.cc" \
    -lns3-core -lns3-network -lns3-internet -lns3-point-to-point -lns3-traffic-control \
    -lns3-applications
echo "$out"
