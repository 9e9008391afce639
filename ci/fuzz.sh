#!/usr/bin/env bash
# Fuzz every parser that reads untrusted bytes: each target `cargo fuzz list`
# reports (so targets added to fuzz/Cargo.toml are picked up) runs for
# SECONDS, starting from its seed corpus fuzz/corpus/<target>/ and its
# dictionary fuzz/dict/<target>.dict when present.
#
# Usage: ci/fuzz.sh SECONDS [TARGET...]
#
# Exits non-zero when any target crashes, leaks, times out (one input over
# ZOT_FUZZ_TIMEOUT seconds, default 10) or runs out of memory
# (ZOT_FUZZ_RSS_MB, default 2048); the input is kept in
# fuzz/artifacts/<target>/ (reproduce: cargo fuzz run TARGET FILE).
# Prints one summary line per target (runs, coverage, features, corpus).
#
# Toolchain: `cargo +nightly` when a nightly toolchain is installed, else the
# stable one with RUSTC_BOOTSTRAP=1 (ZOT_FUZZ_TOOLCHAIN=stable|nightly picks).
# cargo-fuzz is installed from crates.io when missing.
# New inputs go to a scratch corpus (ZOT_FUZZ_WORK, default a temp dir), so
# the committed seeds only change when fuzz/seeds.py is rerun. Builds go to
# ZOT_FUZZ_TARGET_DIR (default fuzz/target).
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "usage: ci/fuzz.sh SECONDS [TARGET...]" >&2
  exit 2
fi
shift

CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
  cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION" >&2
fi

choice="${ZOT_FUZZ_TOOLCHAIN:-}"
if [ -z "$choice" ]; then
  if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    choice=nightly
  else
    choice=stable
  fi
fi
case "$choice" in
  nightly) fuzz=(cargo +nightly fuzz); rustc_v=$(rustc +nightly --version) ;;
  stable) export RUSTC_BOOTSTRAP=1; fuzz=(cargo fuzz); rustc_v=$(rustc --version) ;;
  *) echo "fuzz: ZOT_FUZZ_TOOLCHAIN must be stable or nightly" >&2; exit 2 ;;
esac
echo "fuzz: toolchain $choice ($rustc_v)" >&2

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <("${fuzz[@]}" list)
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets" >&2; exit 1; }

target_dir="${ZOT_FUZZ_TARGET_DIR:-fuzz/target}"
start=$(date +%s)
"${fuzz[@]}" build --target-dir "$target_dir" >&2
echo "fuzz: built ${#targets[@]} targets in $(( $(date +%s) - start )) s" >&2

work="${ZOT_FUZZ_WORK:-}"
if [ -z "$work" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/zot-fuzz.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi
bin_dir="$target_dir/$(rustc -vV | sed -n 's/^host: //p')/release"

failed=0
n_ok=0
n_failed=0
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "fuzz/artifacts/$t"
  seeds=()
  [ -d "fuzz/corpus/$t" ] && seeds=("fuzz/corpus/$t")
  args=(
    "-max_total_time=$secs"
    "-timeout=${ZOT_FUZZ_TIMEOUT:-10}"
    "-rss_limit_mb=${ZOT_FUZZ_RSS_MB:-2048}"
    "-artifact_prefix=fuzz/artifacts/$t/"
    "-print_final_stats=1"
  )
  [ -f "fuzz/dict/$t.dict" ] && args+=("-dict=fuzz/dict/$t.dict")
  log="$work/$t.log"
  rc=0
  "$bin_dir/$t" "${args[@]}" "$work/corpus/$t" ${seeds[@]+"${seeds[@]}"} >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$last")
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    status=ok
    n_ok=$((n_ok + 1))
  else
    failed=1
    n_failed=$((n_failed + 1))
    status="FAILED (exit $rc)"
    if grep -q 'ERROR: libFuzzer: timeout' "$log"; then status="FAILED: timeout";
    elif grep -q 'out-of-memory' "$log"; then status="FAILED: out of memory";
    elif grep -q 'LeakSanitizer' "$log"; then status="FAILED: leak";
    elif grep -qE 'panicked|deadly signal|AddressSanitizer' "$log"; then status="FAILED: crash"; fi
  fi
  printf 'fuzz %-12s %s: %s runs in %s s, cov %s, ft %s, corpus %s, peak rss %s MB\n' \
    "$t" "$status" "${runs:-?}" "$secs" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${peak:-?}"
  if [ "$rc" -ne 0 ]; then
    echo "---- $t: last 40 lines of the libFuzzer log" >&2
    tail -40 "$log" >&2
    ls -1 "fuzz/artifacts/$t/" >&2 || true
  fi
done
echo "fuzz: $n_ok passed, $n_failed failed"
exit "$failed"
