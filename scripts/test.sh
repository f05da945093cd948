#!/usr/bin/env bash
# Installs the project with its test dependencies and runs the whole test suite (slow cases included).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"` for a quick local run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
.venv/bin/python -m pytest -ra --durations=15 "$@"
