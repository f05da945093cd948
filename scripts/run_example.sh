#!/usr/bin/env bash
# Installs the project and compiles the built-in example model into out/example: the bundle is built with
# the host C compiler and its self-test runs against onnxruntime's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/python -m tvm_ext.compile --example --target lowpower -o out/example --force "$@"
