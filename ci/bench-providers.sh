#!/usr/bin/env bash
# Benchmark zot's provider loop (release build) against a local fake
# OpenAI-compatible server answering with zero delay:
#   - a 50-step bash tool loop (`true` in the sandbox): step time, the
#     sandboxed command's share, zot's own time per step, peak RSS;
#   - a 50-step `read` tool loop: zot's own time per step (no sandbox);
#   - a 500-step session: resident memory at step 50 and step 500;
#   - 200 steps against an 8,000-token window, compacted every few steps:
#     zot's own time per request (summary requests included) and memory.
# Targets: zot's own time p50 < 2 ms per step, peak RSS < 30 MiB, memory
# flat over 500 steps, and over 200 steps with compactions (it grows only
# with the kept history).
# Usage: ci/bench-providers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --locked -q -p zot --test bench_providers -- \
    --ignored --nocapture --test-threads=1 2>&1 |
    grep -oE '(bash loop|read loop|session, 500|compaction loop|  VmRSS samples|  compaction VmRSS samples).*'
