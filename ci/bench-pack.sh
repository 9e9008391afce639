#!/usr/bin/env bash
# Benchmark: `zot pack` and `zot verify` of a ~150 MiB agent directory (half
# text, half random data) against the shell pipelines
#   tar -cf - DIR | zstd -3 | sha256sum      (pack)
#   zstd -dc ARCHIVE | sha256sum             (verify)
# in the same run, with wall time and peak RSS. Not part of the test suite.
#
# Usage: ci/bench-pack.sh [ZOT_BINARY] [SIZE_MIB]
#   ZOT_BINARY defaults to target/release/zot (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

zot="${1:-target/release/zot}"
size_mib="${2:-150}"
if [ ! -x "$zot" ]; then
  cargo build --release -p zot
fi
zot="$(cd "$(dirname "$zot")" && pwd)/$(basename "$zot")"
for tool in tar zstd sha256sum python3; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done
have_time=0
[ -x /usr/bin/time ] && have_time=1

work="$(mktemp -d "${TMPDIR:-/tmp}/zot-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
dir="$work/agent"

# --- the tree: half text (many small files), half random (a few big ones) ---
gen() {
mkdir -p "$1"
python3 - "$1" "$2" <<'EOF'
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
    lines = []
    for _ in range(2000):
        lines.append(" ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14))) + f" // {rnd.randint(0, 1 << 30)}")
    data = ("\n".join(lines) + "\n").encode()
    sub = os.path.join(root, "src", f"m{n % 16:02d}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"file{n:05d}.rs"), "wb") as f:
        f.write(data)
    written += len(data)
    n += 1
rand_bytes = size_mib * 1024 * 1024 - written
chunk = 8 * 1024 * 1024
i = 0
while rand_bytes > 0:
    k = min(chunk, rand_bytes)
    with open(os.path.join(root, "assets", "blobs", f"blob{i:03d}.bin"), "wb") as f:
        f.write(os.urandom(k))
    rand_bytes -= k
    i += 1
EOF
}
gen "$dir" "$size_mib"
total=$(du -sb "$dir" | cut -f1)
files=$(find "$dir" -type f | wc -l)
echo "tree: $((total / 1024 / 1024)) MiB in $files files ($(nproc) CPUs, zstd $(zstd -V | grep -o 'v[0-9.]*'))"

# Warm the page cache so every contender reads from memory.
tar -cf - -C "$dir" . > /dev/null

# run LABEL CMD...: wall seconds, CPU seconds (user+sys, all threads and
# child processes) and peak RSS (of the largest process).
run() {
  local label="$1"; shift
  local start end rss="" cpu=""
  start=$(date +%s.%N)
  if [ "$have_time" = 1 ]; then
    /usr/bin/time -v -o "$work/time.txt" "$@" > "$work/out.txt"
  else
    "$@" > "$work/out.txt"
  fi
  end=$(date +%s.%N)
  if [ "$have_time" = 1 ]; then
    rss=$(awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print $2}' "$work/time.txt")
    cpu=$(awk -F: '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$work/time.txt")
  fi
  printf '%-32s %6.2f s wall  %5s s cpu  peak RSS %s KiB\n' "$label" "$(awk "BEGIN{print $end - $start}")" "${cpu:-?}" "${rss:-?}"
}

pipeline_pack() { tar -cf - -C "$dir" . | zstd -q -3 | sha256sum; }
pipeline_pack_mt() { tar -cf - -C "$dir" . | zstd -q -3 -T2 | sha256sum; }
export -f pipeline_pack pipeline_pack_mt
export dir

echo "--- pack (best of 3)"
for i in 1 2 3; do run "zot pack" "$zot" pack "$dir" "$work/bench.zot"; done
for i in 1 2 3; do run "tar | zstd -3 | sha256sum" bash -c pipeline_pack; done
for i in 1 2 3; do run "tar | zstd -3 -T2 | sha256sum" bash -c pipeline_pack_mt; done
echo "archive: $(stat -c %s "$work/bench.zot") bytes"

echo "--- verify (best of 3)"
for i in 1 2 3; do run "zot verify" "$zot" verify "$work/bench.zot"; done
for i in 1 2 3; do run "zstd -dc | sha256sum" bash -c "zstd -q -dc '$work/bench.zot' | sha256sum"; done

echo "--- peak memory vs size: the same runs on a tree a third the size"
gen "$work/small" $((size_mib / 3))
run "zot pack ($((size_mib / 3)) MiB tree)" "$zot" pack "$work/small" "$work/small.zot"
run "zot verify ($((size_mib / 3)) MiB tree)" "$zot" verify "$work/small.zot"
