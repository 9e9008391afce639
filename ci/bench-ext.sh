#!/usr/bin/env bash
# Benchmark bundled extensions with the sim model (release build unless
# ZOT names a binary): wall time of
#   a run of examples/todo-keeper making one extension tool call (start of
#     the Python extension in the sandbox, handshake, call, shutdown), next
#     to a run of the same agent with no tool call and no extension;
#   the round trip of one extension tool call, from a run making 200.
# Usage: ci/bench-ext.sh [runs]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
if [ -z "${ZOT:-}" ]; then
    cargo build --release -p zot >/dev/null
    ZOT="$PWD/target/release/zot"
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export ZOT_HOME="$tmp/home"
mkdir -p "$tmp/ws" "$tmp/plain"
cp examples/todo-keeper/manifest.json examples/todo-keeper/AGENT.md "$tmp/plain/"
sed -i 's/"todo-keeper"/"todo-plain"/' "$tmp/plain/manifest.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
one = [{"text": "", "tool_calls": [{"name": "todo_list", "arguments": {}}]}, {"text": "done"}]
many = [{"text": "", "tool_calls": [{"name": "todo_list", "arguments": {}}] * 200}, {"text": "done"}]
json.dump(one, open(d + "/one.json", "w"))
json.dump(many, open(d + "/many.json", "w"))
json.dump([{"text": "done"}], open(d + "/none.json", "w"))
PY
cd "$tmp/ws"

best() {
    local best_ms=999999
    "$ZOT" "$@" >/dev/null 2>&1 # warm up; fails loudly below if it fails
    for _ in $(seq "$runs"); do
        local t0 t1 ms
        t0=$(date +%s%N)
        "$ZOT" "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        (( ms < best_ms )) && best_ms=$ms
    done
    echo "$best_ms"
}

agent="$OLDPWD/examples/todo-keeper"
plain=$(best run "$tmp/plain" -y --no-session --json --sim-script "$tmp/none.json" go)
one=$(best run "$agent" -y --no-session --json --sim-script "$tmp/one.json" go)
many=$(best run "$agent" -y --no-session --json --sim-script "$tmp/many.json" go)
printf 'run without extension       best %d ms\n' "$plain"
printf 'run with extension, 1 call  best %d ms (extension start, handshake, call, shutdown: +%d ms)\n' "$one" $(( one - plain ))
printf 'extension tool call         %d us per round trip (200 calls in one run)\n' $(( (many - one) * 1000 / 199 ))
