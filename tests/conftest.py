"""Shared fixtures: where the shared models are, and how a test compiles one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def models_dir() -> Path:
    """The shared models: $TVM_EXT_MODELS, else ../shared/models beside the repository."""
    path = Path(os.environ.get("TVM_EXT_MODELS", REPO.parent / "shared" / "models"))
    if not path.is_dir():
        raise RuntimeError(f"shared models not found at {path}: set TVM_EXT_MODELS")
    return path


@pytest.fixture(scope="session")
def shared_models() -> Path:
    return models_dir()


def profile_build_config(profile_name: str):
    """The build configuration (compiler, flags, emulated target) the compiler uses for a device profile."""
    import target
    from tvm_ext.compile.pipeline import build_config

    return build_config(target.load_profile(profile_name))


def profile_target(profile_name: str):
    """The Cortex-M target (core flags and QEMU board) the compiler uses for a device profile."""
    return profile_build_config(profile_name).emulated


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m tvm_ext.compile ARGS` from the repository, with its exit code, stdout and stderr."""
    return subprocess.run([sys.executable, "-m", "tvm_ext.compile", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
