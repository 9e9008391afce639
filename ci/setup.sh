#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian/Ubuntu machine:
# bubblewrap (the first sandbox backend), util-linux (setpriv, unshare), zstd
# (benchmark comparison), python3 (local HTTP server in tests), the real
# programs the risk gate's attack tests run (gawk, ripgrep, zip, sqlite3, vim,
# ed), minisign (signature interop tests), bsdutils (`script`: a terminal for
# password prompts).
# Idempotent; uses sudo when not root.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The risk gate's attack tests run these real programs (a missing one fails
# the suite under ZOT_TEST_MUST_WORK=1, as CI sets).
command -v gawk >/dev/null 2>&1 || need+=(gawk)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v zip >/dev/null 2>&1 || need+=(zip)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
command -v vim >/dev/null 2>&1 || need+=(vim-nox)
command -v ed >/dev/null 2>&1 || need+=(ed)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
command -v minisign >/dev/null 2>&1 || need+=(minisign)
command -v script >/dev/null 2>&1 || need+=(bsdutils)
# The risk gate's attack tests for launchers, build tools and network tools
# (issue 24) run these real programs.
command -v make >/dev/null 2>&1 || need+=(make)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v screen >/dev/null 2>&1 || need+=(screen)
command -v dtach >/dev/null 2>&1 || need+=(dtach)
command -v eatmydata >/dev/null 2>&1 || need+=(eatmydata)
command -v envdir >/dev/null 2>&1 || need+=(daemontools)
command -v socat >/dev/null 2>&1 || need+=(socat)
command -v ncat >/dev/null 2>&1 || need+=(ncat)
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
command -v wget >/dev/null 2>&1 || need+=(wget)
# The proxy tests drive a real client through it.
command -v curl >/dev/null 2>&1 || need+=(curl)
# The pipeline test counts the opens of one launch.
command -v strace >/dev/null 2>&1 || need+=(strace)
# The registry tests (tests/e2e_oci.rs) run the CNCF distribution server,
# htpasswd for its basic auth, openssl for its Bearer tokens, and the oras
# Python SDK as the independent client.
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! python3 -c 'import oras.client' >/dev/null 2>&1; then
  python3 -m pip install -q oras 2>/dev/null \
    || python3 -m pip install -q --break-system-packages oras
fi
