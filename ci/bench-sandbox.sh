#!/usr/bin/env bash
# Launch overhead of `zot sandbox --mode workspace-write -- /bin/true`, measured
# in one run against bare /bin/true and plain bwrap with equivalent flags.
# Prints p50/p90 wall time per variant, the ratio to plain bwrap, and the peak
# RSS measured by GNU time (%M, the largest of the process and the children it
# waited for: for zot that is max(supervisor, bwrap, launcher), so it bounds
# the supervisor's). A process started from python would inherit python's
# high-water mark across exec, hence /usr/bin/time.
# Usage: ci/bench-sandbox.sh [ITERATIONS]   (release build; default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-300}"
cargo build --release -p zot --quiet
ZOT="$PWD/target/release/zot"
BWRAP="$(command -v bwrap)"
WS="$(mktemp -d)"
trap 'rm -rf "$WS"' EXIT
cd "$WS"
python3 - "$N" "$ZOT" "$BWRAP" "$WS" <<'PY'
import os, sys, time, statistics
n, zot, bwrap, ws = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
bw = [bwrap, "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid", "--unshare-ipc",
      "--unshare-uts", "--unshare-cgroup-try", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
      "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run", "--bind", ws, ws,
      "--ro-bind", "/dev/null", ws + "/.git", "--ro-bind", "/dev/null", ws + "/.zot",
      "--ro-bind", "/dev/null", ws + "/.agents", "--chdir", ws, "--", "/bin/true"]
variants = {
    "bare /bin/true": ["/bin/true"],
    "plain bwrap": bw,
    "zot sandbox": [zot, "sandbox", "--mode", "workspace-write", "--", "/bin/true"],
    "zot --backend bwrap": [zot, "sandbox", "--backend", "bwrap", "--mode", "workspace-write", "--", "/bin/true"],
    "zot --version": [zot, "--version"],
}
env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
res = {k: [] for k in variants}
rss = {k: 0 for k in variants}
import subprocess
for name, argv in variants.items():
    for _ in range(5):
        r = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, capture_output=True, text=True, env=env)
        rss[name] = max(rss[name], int(r.stderr.strip().splitlines()[-1]))
devnull = os.open(os.devnull, os.O_RDWR)
for i in range(n + 10):
    for name, argv in variants.items():   # interleaved: same conditions for all
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1)])
        _, status, ru = os.wait4(pid, 0)
        dt = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{name} failed with status {status}")
        if i >= 10:                         # warm-up
            res[name].append(dt * 1000)
p = lambda xs, q: statistics.quantiles(xs, n=100)[q - 1]
base = statistics.median(res["plain bwrap"])
print(f"{'variant':20} {'p50 ms':>8} {'p90 ms':>8} {'x bwrap':>8} {'peak RSS KiB':>13}")
for name in variants:
    m = statistics.median(res[name])
    print(f"{name:20} {m:8.2f} {p(res[name], 90):8.2f} {m / base:8.2f} {rss[name]:13d}")
PY
