#!/usr/bin/env bash
# The project's test command: installs test prerequisites, then runs every
# unit and end-to-end test. CI sets ZOT_TEST_MUST_WORK=1 so a test that
# would skip for a missing kernel feature fails instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
cargo test --workspace --locked --no-fail-fast "$@"
