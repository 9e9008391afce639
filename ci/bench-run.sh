#!/usr/bin/env bash
# Benchmark `zot run` end to end with the sim model (release build): wall
# time and peak RSS of
#   zot run examples/code-reviewer -y --print "run: true"   (bash none: denied)
#   zot run tests/fixtures/run/true-runner -y --print "run: true"  (gate + sandbox)
# Usage: ci/bench-run.sh [runs]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"
cargo build --release -p zot >/dev/null
zot="$PWD/target/release/zot"
export ZOT_HOME; ZOT_HOME="$(mktemp -d)"
trap 'rm -rf "$ZOT_HOME"' EXIT

bench() {
    local label="$1"; shift
    "$zot" "$@" >/dev/null # warm up; also fails loudly if the run fails
    local best_ms=999999 sum_ms=0 max_rss=0
    for _ in $(seq "$runs"); do
        local t0 t1 rss ms
        t0=$(date +%s%N)
        /usr/bin/time -f '%M' -o "$ZOT_HOME/rss" "$zot" "$@" >/dev/null
        t1=$(date +%s%N)
        rss=$(tail -n1 "$ZOT_HOME/rss")
        ms=$(( (t1 - t0) / 1000000 ))
        (( ms < best_ms )) && best_ms=$ms
        sum_ms=$(( sum_ms + ms ))
        (( rss > max_rss )) && max_rss=$rss
    done
    printf '%-14s runs %d  wall best %d ms  mean %d ms  peak RSS %d KiB\n' \
        "$label" "$runs" "$best_ms" $(( sum_ms / runs )) "$max_rss"
}

bench code-reviewer run examples/code-reviewer -y --no-session --print "run: true"
bench true-runner run tests/fixtures/run/true-runner -y --no-session --print "run: true"
