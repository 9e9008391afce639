#!/usr/bin/env bash
# The filtering proxy on loopback, as a sandbox uses it (client -> bridge
# process -> unix socket -> proxy process -> origin): throughput of a large
# download through it against the same download direct (target >= 0.8x),
# the latency it adds to a request on a new connection (target p50 < 1 ms),
# and the resident memory of proxy and bridge with 200 tunnels open.
# Usage: ci/bench-proxy.sh [MEGABYTES] [REQUESTS]   (release build; default 200 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench -p zot-supervisor --bench proxy --quiet -- "${1:-200}" "${2:-1000}"
