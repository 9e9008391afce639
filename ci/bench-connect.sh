#!/bin/sh
# What the supervisor's check of connect/sendto/sendmsg costs per call:
# 10,000 loopback unix-socket operations inside the sandbox (own sockets in
# its /tmp), on the host and on the bwrap and native backends. A second zot
# binary (BASELINE=path, e.g. one built before a change) is measured too.
# Usage: ci/bench-connect.sh [N]   (release build; default 10000)
set -eu
N="${1:-10000}"
cd "$(dirname "$0")/.."
cargo build --release -p zot >/dev/null 2>&1 || cargo build --release -p zot
ZOT="$(pwd)/target/release/zot"
WS="$(mktemp -d "$(pwd)/target/bench-ws-XXXXXX")"
trap 'rm -rf "$WS"' EXIT
exec python3 ci/bench_connect.py "$WS" "$N" "$ZOT" ${BASELINE:+"$BASELINE"}
