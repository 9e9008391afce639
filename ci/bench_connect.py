#!/usr/bin/env python3
"""The cost of the supervisor's check of each connect and addressed send:
N loopback unix-socket operations inside the sandbox (the command's own
sockets in its private /tmp), timed inside the command, so the launch is
not counted. Variants: the host (no sandbox), and each backend of each zot
given (a second binary, e.g. one built before a change, is the baseline).

usage: bench_connect.py WORKSPACE N ZOT [ZOT...]
"""
import os
import subprocess
import sys

ws, n, zots = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
PROG = r'''
import socket, sys, time, os
n = int(sys.argv[1])
d = '/tmp/zot-bench-%d' % os.getpid()
os.makedirs(d, exist_ok=True)
res = {}
l = socket.socket(socket.AF_UNIX); l.bind(d + '/s.sock'); l.listen(128)
def connects(blocking):
    t = time.perf_counter()
    for _ in range(n):
        c = socket.socket(socket.AF_UNIX)
        c.setblocking(blocking)
        c.connect(d + '/s.sock')
        l.accept()[0].close()
        c.close()
    return (time.perf_counter() - t) / n * 1e6
res['connect (blocking)'] = connects(True)
res['connect (non-blocking)'] = connects(False)
g = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); g.bind(d + '/g.sock')
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
t = time.perf_counter()
for _ in range(n):
    s.sendto(b'x' * 64, d + '/g.sock'); g.recv(64)
res['sendto 64 B (datagram)'] = (time.perf_counter() - t) / n * 1e6
a, b = socket.socketpair()
t = time.perf_counter()
for _ in range(n):
    a.sendmsg([b'y' * 64]); b.recv(64)
res['sendmsg 64 B (stream)'] = (time.perf_counter() - t) / n * 1e6
t = time.perf_counter()
for _ in range(n):
    a.send(b'z' * 64); b.recv(64)
res['send 64 B (not checked)'] = (time.perf_counter() - t) / n * 1e6
for k, v in res.items():
    print('%s\t%.2f' % (k, v))
'''
env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
os.chdir(ws)
variants = [("host (no sandbox)", [])]
for i, z in enumerate(zots):
    tag = "" if i == 0 else " [%s]" % z
    for b in ["bwrap", "native"]:
        variants.append((f"zot {b}{tag}", [z, "sandbox", "--backend", b, "--mode", "workspace-write", "--"]))
rows = {}
for name, pre in variants:
    out = subprocess.run(pre + ["/usr/bin/python3", "-c", PROG, str(n)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"{name} failed: {out.stderr}")
    rows[name] = dict(l.split("\t") for l in out.stdout.splitlines())
load = open("/proc/loadavg").read().split()[:3]
ops = list(next(iter(rows.values())).keys())
print(f"{n} operations each, microseconds per operation; load average {' '.join(load)}")
print(f"{'variant':40}" + "".join(f"{o:>26}" for o in ops))
for name, r in rows.items():
    print(f"{name:40}" + "".join(f"{float(r[o]):26.1f}" for o in ops))
