#!/usr/bin/env bash
# Launch time of `zot sandbox --mode workspace-write -- /bin/true` on the
# bwrap and native backends against plain bubblewrap with the same mounts
# (the arguments zot's bwrap backend renders from its plan), and of
# danger-full-access against `env /bin/true` (one more exec'd process,
# the floor of any wrapper): all variants interleaved in one
# run (pairwise, same machine moment). Prints p50/p90 per variant, the
# ratios against plain bwrap with their targets, and peak RSS (GNU time %M:
# for zot the largest of the supervisor and the processes it waited for).
# Measure on a quiet machine: the load average is printed with the figures.
# Usage: ci/bench-sandbox.sh [ROUNDS]   (release build; default 300)
# BASELINE=path/to/other/zot adds that binary's bwrap and native launches.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-300}"
cargo build --release -p zot --quiet
ZOT="$PWD/target/release/zot"
# Outside /tmp: the sandbox replaces the host's /tmp, a workspace there
# would be bound back and measure an extra mount.
WS="$(mktemp -d "$PWD/target/bench-ws-XXXXXX")"
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/.git/hooks" && echo '[core]' > "$WS/.git/config"
python3 ci/bench_launch.py "$ZOT" "$WS" "$N" --extra ${BASELINE:+--baseline "$BASELINE"}
echo
echo "peak RSS (KiB, GNU time %M, max of 5 runs):"
cd "$WS"
for v in "/bin/true" "$ZOT sandbox --backend bwrap --mode workspace-write -- /bin/true" \
         "$ZOT sandbox --backend native --mode workspace-write -- /bin/true"; do
    m=0
    for _ in 1 2 3 4 5; do
        r=$( { /usr/bin/time -f "%M" $v >/dev/null; } 2>&1 | tail -1 )
        [ "$r" -gt "$m" ] && m=$r
    done
    printf '  %-70s %6d\n' "${v/$ZOT/zot}" "$m"
done
