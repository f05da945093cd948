#!/usr/bin/env bash
# Installs what the project needs into ./.venv (created if missing): the package itself, and with --test the
# reference runtimes and test tools too. Safe to run again; prints what it does.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
if [ "${1:-}" = "--test" ]; then
  extras="[test,models]"
fi
# Debian packages: the Cortex-M cross toolchain and QEMU (bundles for device profiles build and run on them).
bash scripts/install_deps.sh
if [ ! -x .venv/bin/python ]; then
  echo "install: creating .venv"
  python3 -m venv .venv
fi
echo "install: pip install -e .${extras}"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
