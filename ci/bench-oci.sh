#!/usr/bin/env bash
# Benchmark: publishing and pulling an agent through an OCI registry,
# pairwise against the oras Python SDK on the same .zot, on a local CNCF
# distribution server (docker-registry, plain HTTP on 127.0.0.1).
#
#   push: zot publish ARCHIVE REF        vs  oras push of the same file
#   pull: zot install REF (pull + verify + store)  vs  oras pull REF
#
# The agent is a ~150 MiB tree (half text, half random data), packed to a
# .zot within the archive size limit (100 MiB compressed). Each contender
# pushes to its own repository, so no blob is skipped. Prints wall seconds
# and the zot/oras ratio of each pair (median of ROUNDS). Not part of the
# test suite.
#
# Usage: ci/bench-oci.sh [ZOT_BINARY] [SIZE_MIB] [ROUNDS]
#   ZOT_BINARY defaults to target/release/zot (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

zot="${1:-target/release/zot}"
size_mib="${2:-150}"
rounds="${3:-3}"
if [ ! -x "$zot" ]; then
  cargo build --release -p zot
fi
zot="$(cd "$(dirname "$zot")" && pwd)/$(basename "$zot")"
for tool in docker-registry python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required (ci/setup.sh)" >&2; exit 1; }
done
python3 -c 'import oras.client' 2>/dev/null || { echo "bench: the oras Python SDK is required (ci/setup.sh)" >&2; exit 1; }
oras_client="$PWD/tests/fixtures/oci/oras_client.py"

work="$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-oci.XXXXXX")"
reg_pid=""
cleanup() {
  [ -n "$reg_pid" ] && kill "$reg_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- the agent: half text (many small files), half random (big ones) ---
dir="$work/agent"
mkdir -p "$dir"
python3 - "$dir" "$size_mib" <<'EOF'
import os, random, sys
root, size_mib = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
os.makedirs(os.path.join(root, "assets", "blobs"), exist_ok=True)
with open(os.path.join(root, "manifest.json"), "w") as f:
    f.write('{"zotfile": 1, "name": "bench-agent", "version": "1.0.0"}\n')
with open(os.path.join(root, "AGENT.md"), "w") as f:
    f.write("# Bench agent\n")
words = ("fn let mut impl struct enum match return self where trait pub use mod "
         "the agent reads files and reports findings with line numbers severity "
         "error warning note value result option string vector index").split()
text_bytes = size_mib * 1024 * 1024 // 2
written, n = 0, 0
while written < text_bytes:
    lines = [" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14))) + f" // {rnd.randint(0, 1 << 30)}" for _ in range(2000)]
    data = ("\n".join(lines) + "\n").encode()
    sub = os.path.join(root, "src", f"m{n % 16:02d}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"file{n:05d}.rs"), "wb") as f:
        f.write(data)
    written += len(data)
    n += 1
rand_bytes = size_mib * 1024 * 1024 - written
i = 0
while rand_bytes > 0:
    k = min(8 << 20, rand_bytes)
    with open(os.path.join(root, "assets", "blobs", f"blob{i:03d}.bin"), "wb") as f:
        f.write(os.urandom(k))
    rand_bytes -= k
    i += 1
EOF
archive="$work/bench-agent.zot"
"$zot" pack "$dir" "$archive" > /dev/null
size=$(stat -c %s "$archive")
echo "agent: ${size_mib} MiB tree -> $((size / 1024 / 1024)) MiB .zot ($(nproc) CPUs)"

# --- the registry ---
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/registry.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 &
reg_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.1
done
host="127.0.0.1:$port"
export ZOT_HOME="$work/zot-home"
export ZOT_AGENT_CONSENT=0

secs() {
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.3f}')"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

zp=(); op=(); zl=(); ol=()
for r in $(seq "$rounds"); do
  zp+=("$(secs "$zot" publish "$archive" "$host/zot/r$r:v1")")
  mkdir -p "$work/oras-src"
  cp "$archive" "$work/oras-src/bench-agent.zot"
  op+=("$(secs python3 "$oras_client" push "$host" "$host/oras/r$r:v1" "$work/oras-src/bench-agent.zot" \
    application/vnd.zot.agent.layer.v1.tar+zstd application/vnd.zot.agent.v1)")
  rm -rf "$ZOT_HOME" "$work/oras-out"
  zl+=("$(secs "$zot" install "$host/zot/r$r:v1")")
  ol+=("$(secs python3 "$oras_client" pull "$host" "$host/oras/r$r:v1" "$work/oras-out")")
done
# zot install also verifies (decompresses and hashes every file) and
# copies into the store: the local part, measured on its own.
zv=$(secs "$zot" verify "$archive")

zpm=$(median "${zp[@]}"); opm=$(median "${op[@]}")
zlm=$(median "${zl[@]}"); olm=$(median "${ol[@]}")
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
mib=$(python3 -c "print($size / 1048576)")
rate() { python3 -c "print(f'{$mib / $1:.0f}')"; }
printf '%-34s %8s %10s %8s\n' "" "seconds" "MiB/s" "zot/oras"
printf '%-34s %8s %10s %8s\n' "push: zot publish" "$zpm" "$(rate "$zpm")" "$(ratio "$zpm" "$opm")"
printf '%-34s %8s %10s\n' "push: oras push (Python SDK)" "$opm" "$(rate "$opm")"
printf '%-34s %8s %10s %8s\n' "pull: zot install (pull+verify)" "$zlm" "$(rate "$zlm")" "$(ratio "$zlm" "$olm")"
printf '%-34s %8s %10s\n' "pull: oras pull (Python SDK)" "$olm" "$(rate "$olm")"
printf '%-34s %8s\n' "  of which zot verify (local)" "$zv"
echo "rounds: $rounds (medians); all runs: zot publish ${zp[*]}; oras push ${op[*]}; zot install ${zl[*]}; oras pull ${ol[*]}"
