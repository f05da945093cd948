#!/usr/bin/env bash
# Installs the project with its test dependencies and runs the whole test suite (slow cases included).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"` for a quick local run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
# Python writes the repository's bytecode (__pycache__, ignored by git) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): the processes the tests start (a command's compile, the ONNX conformance workers,
# `python -c` checks) then read it instead of compiling the modules again. A compile imports some 340 of them:
# 1.1-1.3 CPU-s from source, 0.5-0.6 from bytecode (measured three times each, loaded machine).
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest -ra --durations=15 "$@"
