#!/usr/bin/env python3
"""Launch time of `zot sandbox -- /bin/true` against plain bubblewrap with
the same mounts, measured pairwise: every round runs each variant once, in
turn, so all of them see the same machine moment. Prints the median and p90
of each variant, the ratios of the medians, and the median of the per-round
ratios (robust against a busy machine).

Plain bwrap builds exactly the view zot's bwrap backend renders from the
plan (`view_args` of `zot debug sandbox --explain --json --backend bwrap`:
the bwrap arguments plus the last mounts, which zot's launcher makes inside
the view), so the only difference is zot itself: its supervisor, the
launcher inside, the hardening.

usage: bench_launch.py ZOT WORKSPACE ROUNDS [--extra] [--baseline OTHER_ZOT]

--baseline adds the bwrap and native launches of another zot binary (one
built before a change) to the same interleaved rounds.
"""
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

zot, ws, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = "--extra" in sys.argv[4:]
baseline = None
if "--baseline" in sys.argv[4:]:
    baseline = sys.argv[sys.argv.index("--baseline") + 1]


def installed(binary):
    """A copy of `binary` (and the zot-full beside it, which the front
    runs), as `cargo install` makes: a file the linker has just written sits
    in the page cache in a layout that makes its start 0.3-0.5 ms slower on
    the development VM, which no installed binary has."""
    d = tempfile.mkdtemp(prefix="bench-bin-", dir=os.path.dirname(os.path.abspath(ws)))
    atexit.register(shutil.rmtree, d, True)
    for name in {os.path.basename(binary), "zot-full"}:
        src = os.path.join(os.path.dirname(binary), name)
        if os.path.exists(src):
            shutil.copy2(src, d)
    return os.path.join(d, os.path.basename(binary))


zot = installed(zot)
if baseline:
    baseline = installed(baseline)
env = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": os.environ.get("HOME", "/root"),
    "LANG": "C.UTF-8",
}
os.chdir(ws)

ex = json.loads(
    subprocess.run(
        [zot, "debug", "sandbox", "--explain", "--json", "--mode", "workspace-write", "--backend", "bwrap"],
        capture_output=True, check=True, env=env,
    ).stdout
)
bwrap = [ex["bwrap"]["path"], *ex["bwrap"].get("view_args", ex["bwrap"]["args"]), "--", "/bin/true"]
placeholders = [m["dst"] for m in ex["plan"]["mounts"] if m["op"] == "block-create"]

variants = {
    "bare /bin/true": ["/bin/true"],
    "plain bwrap (same mounts)": bwrap,
    "zot --backend bwrap": [zot, "sandbox", "--backend", "bwrap", "--mode", "workspace-write", "--", "/bin/true"],
    "zot --backend native": [zot, "sandbox", "--backend", "native", "--mode", "workspace-write", "--", "/bin/true"],
    "zot danger-full-access": [zot, "sandbox", "--mode", "danger-full-access", "--", "/bin/true"],
    # What one more glibc process in the chain costs here (a C exec
    # wrapper): the floor for anything that starts the command itself, and
    # the reference of the danger-full-access target.
    "env /bin/true (exec wrapper)": ["/usr/bin/env", "/bin/true"],
}
if baseline:
    for b in ["bwrap", "native"]:
        variants[f"baseline --backend {b}"] = [baseline, "sandbox", "--backend", b, "--mode", "workspace-write", "--", "/bin/true"]
if extra:
    # The start alone: the front, and the full binary it hands the other
    # commands to.
    variants["zot sandbox --version"] = [zot, "sandbox", "--version"]
    variants["zot-full --version"] = [os.path.join(os.path.dirname(zot), "zot-full"), "--version"]
    variants["unshare -Urnmpiuf (floor)"] = ["/usr/bin/unshare", "-Urnmpiuf", "/bin/true"]
    variants["zot bwrap, zot as launcher"] = [zot, "sandbox", "--backend", "bwrap", "--exec-launcher", "--mode", "workspace-write", "--", "/bin/true"]
    variants["zot native, launcher exec'd"] = [zot, "sandbox", "--backend", "native", "--exec-launcher", "--mode", "workspace-write", "--", "/bin/true"]
    variants["zot --backend landlock (ro)"] = [zot, "sandbox", "--backend", "landlock", "--", "/bin/true"]


def cleanup():
    # Plain bwrap leaves the placeholder files of missing protected paths
    # behind (zot removes them): remove them so zot's plan stays the same.
    for p in placeholders:
        try:
            if os.path.isfile(p) and os.path.getsize(p) == 0:
                os.remove(p)
        except OSError:
            pass


devnull = os.open(os.devnull, os.O_RDWR)
acts = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
res = {k: [] for k in variants}
warmup = 10
for i in range(rounds + warmup):
    for name, argv in variants.items():
        t0 = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=acts)
        _, status, _ = os.wait4(pid, 0)
        dt = (time.perf_counter() - t0) * 1000
        cleanup()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{name} failed with status {status}: {argv}")
        if i >= warmup:
            res[name].append(dt)

load = open("/proc/loadavg").read().split()[:3]
print(f"{rounds} rounds, interleaved; load average {' '.join(load)}")
print(f"{'variant':30} {'p50 ms':>8} {'p90 ms':>8} {'x bwrap':>8}")
base = statistics.median(res["plain bwrap (same mounts)"])
for name in variants:
    xs = sorted(res[name])
    m = statistics.median(xs)
    p90 = xs[int(len(xs) * 0.9) - 1]
    print(f"{name:30} {m:8.2f} {p90:8.2f} {m / base:8.2f}")


def paired(a, b):
    return statistics.median([x / y for x, y in zip(res[a], res[b])])


def paired_diff(a, b):
    return statistics.median([x - y for x, y in zip(res[a], res[b])])


plain = "plain bwrap (same mounts)"
bw = statistics.median(res["zot --backend bwrap"]) / base
nat = statistics.median(res["zot --backend native"]) / base
danger = statistics.median(res["zot danger-full-access"]) - statistics.median(res["env /bin/true (exec wrapper)"])
print()
print(f"bwrap backend / plain bwrap:  {bw:.2f}x (per-round median {paired('zot --backend bwrap', plain):.2f}x; target <= 1.30x)")
print(f"native backend / plain bwrap: {nat:.2f}x (per-round median {paired('zot --backend native', plain):.2f}x; target <= 0.80x)")
print(f"danger-full-access - env /bin/true: {danger:+.2f} ms (per-round median {paired_diff('zot danger-full-access', 'env /bin/true (exec wrapper)'):+.2f} ms; target <= +0.50 ms)")
if baseline:
    for b in ["bwrap", "native"]:
        d = statistics.median(res[f"zot --backend {b}"]) - statistics.median(res[f"baseline --backend {b}"])
        print(f"{b}: this zot - baseline: {d:+.2f} ms (per-round median ratio {paired(f'zot --backend {b}', f'baseline --backend {b}'):.3f}x)")
wrap = statistics.median(res["env /bin/true (exec wrapper)"]) - statistics.median(res["bare /bin/true"])
print(f"  (a C exec wrapper, env /bin/true, over a bare exec: {wrap:+.2f} ms)")
