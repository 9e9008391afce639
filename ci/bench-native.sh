#!/bin/sh
# Launch overhead of the native backend: `zot sandbox --backend native
# --mode workspace-write -- /bin/true` against bare /bin/true, plain bwrap
# with equivalent flags, and zot's bwrap backend, in one run (p50/p90 over
# N launches, release build). Also the wall time of `zot debug sandbox --check`.
# Usage: ci/bench-native.sh [N]   (default N=200)
set -eu
N="${1:-200}"
cd "$(dirname "$0")/.."
cargo build --release -p zot >/dev/null 2>&1 || cargo build --release -p zot
ZOT="$(pwd)/target/release/zot"
BWRAP="$(command -v bwrap || true)"
WS="$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-XXXXXX")"
trap 'rm -rf "$WS"' EXIT
mkdir -p "$WS/.git" && echo '[core]' > "$WS/.git/config"
cd "$WS"
exec python3 - "$N" "$ZOT" "$BWRAP" "$WS" <<'PY'
import os, statistics, subprocess, sys, time

n, zot, bwrap, ws = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]

def bench(name, argv, runs=n):
    # warm-up, then measure each launch's wall time
    for _ in range(min(5, runs)):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    p50 = statistics.median(times)
    p90 = times[int(len(times) * 0.9) - 1]
    print(f"{name:<34} p50 {p50:7.2f} ms   p90 {p90:7.2f} ms   (n={runs})")
    return p50

results = {}
results["bare"] = bench("bare /bin/true", ["/bin/true"])
if bwrap:
    plain = [bwrap, "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid",
             "--unshare-net", "--unshare-ipc", "--unshare-uts", "--ro-bind", "/", "/",
             "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp",
             "--tmpfs", "/run", "--bind", ws, ws, "--ro-bind", ws + "/.git/config", ws + "/.git/config",
             "--chdir", ws, "--", "/bin/true"]
    results["bwrap"] = bench("plain bwrap (equivalent flags)", plain)
    results["zot-bwrap"] = bench("zot sandbox --backend bwrap", [zot, "sandbox", "--backend", "bwrap", "--mode", "workspace-write", "--", "/bin/true"])
results["native"] = bench("zot sandbox --backend native", [zot, "sandbox", "--backend", "native", "--mode", "workspace-write", "--", "/bin/true"])
results["landlock"] = bench("zot sandbox --backend landlock (ro)", [zot, "sandbox", "--backend", "landlock", "--", "/bin/true"])
results["check"] = bench("zot debug sandbox --check (native)", [zot, "debug", "sandbox", "--check", "--backend", "native"], runs=max(5, n // 20))
results["check-auto"] = bench("zot debug sandbox --check (auto)", [zot, "debug", "sandbox", "--check"], runs=max(5, n // 20))
if "bwrap" in results:
    print(f"native / plain bwrap (p50): {results['native'] / results['bwrap']:.2f}x (target < 0.8x)")
print(f"--check p50: {results['check-auto']:.0f} ms (target < 2000 ms)")
PY
