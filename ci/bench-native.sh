#!/bin/sh
# The native backend's launch against plain bubblewrap with the same mounts
# and zot's bwrap backend, interleaved in one run (the same driver as
# ci/bench-sandbox.sh: both ratios against plain bwrap), then the wall time
# of `zot debug sandbox --check` on the native and the auto backend.
# Usage: ci/bench-native.sh [ROUNDS]   (release build; default 200)
set -eu
N="${1:-200}"
cd "$(dirname "$0")/.."
cargo build --release -p zot >/dev/null 2>&1 || cargo build --release -p zot
ZOT="$(pwd)/target/release/zot"
WS="$(mktemp -d "$(pwd)/target/bench-ws-XXXXXX")"
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/.git/hooks" && echo '[core]' > "$WS/.git/config"
python3 ci/bench_launch.py "$ZOT" "$WS" "$N"
cd "$WS"
exec python3 - "$N" "$ZOT" <<'PY'
import statistics, subprocess, sys, time
n, zot = int(sys.argv[1]), sys.argv[2]
for name, argv in [("zot debug sandbox --check (native)", [zot, "debug", "sandbox", "--check", "--backend", "native"]),
                   ("zot debug sandbox --check (auto)", [zot, "debug", "sandbox", "--check"])]:
    times = []
    for _ in range(max(5, n // 20)):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    print(f"{name:<40} p50 {statistics.median(times):7.1f} ms (target < 2000 ms)")
PY
