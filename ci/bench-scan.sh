#!/usr/bin/env bash
# Launch cost of the repository scan: `zot sandbox --mode workspace-write --
# /bin/true` in an empty workspace (one .git) against a workspace of 20,000
# directories holding 10 nested repositories (any depth: the scan reads
# every directory below the writable roots at launch and again after the
# command, for the quarantine of new repositories). Both variants
# interleaved in one run; prints p50/p90 per variant, the added time, and
# the scan alone (`zot debug sandbox --explain`, which scans once and runs
# nothing) for both workspaces. Target: under 15 ms added.
# Usage: ci/bench-scan.sh [ROUNDS] [BACKEND]   (release build; default 100 bwrap)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100}"
BACKEND="${2:-bwrap}"
cargo build --release -p zot --quiet
ZOT="$PWD/target/release/zot"
# Outside /tmp: the sandbox replaces the host's /tmp.
BASE="$(mktemp -d "$PWD/target/bench-scan-XXXXXX")"
trap 'rm -rf "$BASE"' EXIT
mkdir -p "$BASE/empty/.git/hooks" "$BASE/big/.git/hooks" "$BASE/state"
python3 - "$BASE/big" <<'PY'
import os, sys
root = sys.argv[1]
n = 0
for i in range(100):
    for j in range(199):
        os.makedirs(f"{root}/d{i}/s{j}")
        n += 1
    n += 1
for k in range(10):
    r = f"{root}/d{k*10}/s{k}/nested{k}"
    os.makedirs(f"{r}/.git/hooks")
    open(f"{r}/.git/config", "w").write("[core]\n")
print(f"big workspace: {n} directories, 10 nested repositories")
PY
export ZOT_HOME="$BASE/state"
python3 - "$ZOT" "$BASE" "$N" "$BACKEND" <<'PY'
import os, subprocess, sys, time
zot, base, n, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def once(ws, argv):
    t = time.perf_counter()
    subprocess.run(argv, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000
run = [zot, "sandbox", "--backend", backend, "--mode", "workspace-write", "--", "/bin/true"]
explain = [zot, "debug", "sandbox", "--explain", "--json", "--mode", "workspace-write"]
res = {k: [] for k in ("run-empty", "run-big", "explain-empty", "explain-big")}
for _ in range(3):  # warm the caches
    for ws in ("empty", "big"):
        once(f"{base}/{ws}", run)
for _ in range(n):
    for ws in ("empty", "big"):
        res[f"run-{ws}"].append(once(f"{base}/{ws}", run))
for _ in range(max(10, n // 5)):
    for ws in ("empty", "big"):
        res[f"explain-{ws}"].append(once(f"{base}/{ws}", explain))
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]
print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared: figures move with it)")
print(f"{'variant':<52} {'p50 ms':>8} {'p90 ms':>8}")
for k, label in [("run-empty", f"zot sandbox ({backend}) -- /bin/true, empty workspace"),
                 ("run-big", f"zot sandbox ({backend}) -- /bin/true, 20k dirs + 10 repos"),
                 ("explain-empty", "zot debug sandbox --explain, empty workspace"),
                 ("explain-big", "zot debug sandbox --explain, 20k dirs + 10 repos")]:
    print(f"{label:<52} {pct(res[k], .5):8.2f} {pct(res[k], .9):8.2f}")
added = pct(res["run-big"], .5) - pct(res["run-empty"], .5)
print(f"added by the scans (launch + after the command), p50: {added:.2f} ms (target < 15 ms)")
print(f"one scan (explain big - empty), p50: {pct(res['explain-big'], .5) - pct(res['explain-empty'], .5):.2f} ms")
PY
