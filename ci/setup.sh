#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian/Ubuntu machine:
# bubblewrap (the first sandbox backend), util-linux (setpriv, unshare), zstd
# (benchmark comparison), python3 (local HTTP server in tests), minisign
# (signature interop tests), bsdutils (`script`: a terminal for password prompts).
# Idempotent; uses sudo when not root.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v minisign >/dev/null 2>&1 || need+=(minisign)
command -v script >/dev/null 2>&1 || need+=(bsdutils)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
