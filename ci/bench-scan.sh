#!/usr/bin/env bash
# What the workspace index costs a launch in a large workspace: a tree of
# 55,000 directories (node_modules-like) holding 10 nested git repositories,
# against an empty workspace (one .git).
#
# 1. A `zot run` session of 20 bash calls (the `sim` model; an agent whose
#    bash may run `true`, writing in the workspace): the time of each call,
#    from one `tool_result` event to the next. The session's index is built
#    once in the background and kept current from inotify events.
#    Target: median call in the big workspace within 1.3x the empty one.
#    Sessions run in rounds, one per workspace, in alternating order; the
#    ratio is given over all calls and as the median of per-round ratios.
#    A third workspace holds the same 10 repositories and no tree: big
#    against it is what the tree costs (discovery); it against empty is
#    what protecting 10 more repositories costs (their read-only binds).
# 2. One-shot `zot sandbox --mode workspace-write -- /bin/true` in the
#    unchanged, warm big workspace (the persisted index, validated with one
#    statx per directory) against `find WS -type d`, pairwise.
#    Target: <= 0.5x.
# Usage: ci/bench-scan.sh [ROUNDS] [BACKEND]   (release build; default 30 bwrap)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-30}"
BACKEND="${2:-bwrap}"
cargo build --release -p zot --quiet
ZOT="${CARGO_TARGET_DIR:-$PWD/target}/release/zot"
# Outside /tmp: the sandbox replaces the host's /tmp.
BASE="$(mktemp -d "$PWD/target/bench-scan-XXXXXX")"
trap 'rm -rf "$BASE"' EXIT
mkdir -p "$BASE/empty/.git/hooks" "$BASE/big/.git/hooks" "$BASE/repos/.git/hooks" "$BASE/state" "$BASE/agent"
for k in $(seq 0 9); do
    mkdir -p "$BASE/repos/p$k/m$k/nested$k/.git/hooks"
    echo "[core]" > "$BASE/repos/p$k/m$k/nested$k/.git/config"
done
python3 - "$BASE/big" <<'PY'
import os, sys
root = sys.argv[1]
n = 0
# 55 packages x 999 directories below them, like a node_modules tree
for i in range(55):
    for j in range(111):
        for k in range(8):
            os.makedirs(f"{root}/node_modules/p{i}/m{j}/d{k}")
            n += 1
        n += 1
    n += 1
for k in range(10):
    r = f"{root}/node_modules/p{k*5}/m{k}/nested{k}"
    os.makedirs(f"{r}/.git/hooks")
    open(f"{r}/.git/config", "w").write("[core]\n")
print(f"big workspace: {n} directories, 10 nested repositories")
PY
cat > "$BASE/agent/manifest.json" <<'JSON'
{
  "zotfile": 1,
  "name": "scan-bench",
  "version": "0.1.0",
  "description": "Benchmark agent: bash may run `true`, writing in the workspace.",
  "permissions": {
    "fs": { "read": ["${workspace}"], "write": ["${workspace}"] },
    "bash": { "mode": "allowlist", "allow": ["true"] }
  }
}
JSON
echo "Runs \`true\`." > "$BASE/agent/AGENT.md"
python3 - "$BASE/script.json" <<'PY'
import json, sys
turns = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]} for _ in range(20)]
turns.append({"text": "done"})
json.dump(turns, open(sys.argv[1], "w"))
PY
export ZOT_HOME="$BASE/state"
python3 - "$ZOT" "$BASE" "$N" "$BACKEND" <<'PY'
import json, os, statistics, subprocess, sys, time
zot, base, n, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def session(ws):
    """Per-call times (ms) of one 20-call session: tool_result to tool_result."""
    argv = [zot, "run", f"{base}/agent", "-y", "--no-session", "--json", "--backend", backend,
            "--sim-script", f"{base}/script.json", "go"]
    p = subprocess.Popen(argv, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    stamps = []
    for line in p.stdout:
        ev = json.loads(line)
        if ev.get("type") == "tool_result":
            if ev.get("is_error"):
                raise SystemExit(f"tool call failed: {ev.get('content')}")
            stamps.append(time.perf_counter())
    if p.wait() != 0:
        raise SystemExit(f"zot run failed in {ws}")
    return [(b - a) * 1000 for a, b in zip(stamps, stamps[1:])]

def once(ws, argv):
    t = time.perf_counter()
    subprocess.run(argv, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t) * 1000

sandbox = [zot, "sandbox", "--backend", backend, "--mode", "workspace-write", "--", "/bin/true"]
find = ["find", f"{base}/big", "-type", "d"]
calls = {"empty": [], "repos": [], "big": []}
# Rounds of one session per workspace, in an order that alternates (a
# load that changes during a round weighs on each workspace alike); the
# ratio is also taken per round, as the launch benchmarks do.
sessions = max(6, n // 3)
per_round = []
for ws in calls:  # warm up (and the persisted indexes)
    session(f"{base}/{ws}")
for r in range(sessions):
    got = {}
    for ws in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
        got[ws] = session(f"{base}/{ws}")
        calls[ws] += got[ws]
    per_round.append(statistics.median(got["big"]) / statistics.median(got["empty"]))
pairs = []
for _ in range(3):
    once(f"{base}/big", sandbox)
    once(f"{base}/big", find)
for _ in range(n):
    s = once(f"{base}/big", sandbox)
    f = once(f"{base}/big", find)
    pairs.append((s, f))

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared: figures move with it)")
print(f"zot run, {sessions} sessions of 20 bash calls each ({backend}):")
print(f"  {'workspace':<38} {'p50 ms':>8} {'p90 ms':>8}")
for ws, label in (("empty", "empty (one .git)"), ("repos", "10 nested repos, no tree"),
                  ("big", "55k dirs + 10 nested repos")):
    print(f"  {label:<38} {pct(calls[ws], .5):8.2f} {pct(calls[ws], .9):8.2f}")
ratio = statistics.median(calls["big"]) / statistics.median(calls["empty"])
print(f"  median call big/empty: {ratio:.2f}x, per-round median {statistics.median(per_round):.2f}x "
      f"(target <= 1.3x)")
m = {k: statistics.median(v) for k, v in calls.items()}
print(f"  of which the tree (big/repos): {m['big'] / m['repos']:.2f}x, "
      f"protecting 10 more repositories (repos/empty): {m['repos'] / m['empty']:.2f}x")
ratios = [s / f for s, f in pairs]
print(f"one-shot zot sandbox ({backend}) -- /bin/true vs find WS -type d, warm, {n} pairs:")
print(f"  zot sandbox p50 {pct([s for s, _ in pairs], .5):.2f} ms, find p50 {pct([f for _, f in pairs], .5):.2f} ms")
print(f"  pairwise ratio p50 {pct(ratios, .5):.2f}x, p90 {pct(ratios, .9):.2f}x (target <= 0.5x)")
PY
