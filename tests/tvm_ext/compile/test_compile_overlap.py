"""Compile time: the work that overlaps. The reference runtime's child process runs beside the passes and the
code generation, and ends with the compile however it ends; the bundle's C files compile `jobs` at once."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_early_objects import fake_compiler
from test_packager import hand_made_bundle

from tvm_ext.compile import CompileError


def children() -> set[int]:
    """The child processes of this test process, running or ended but not yet waited for."""
    return {int(child) for task in Path(f"/proc/{os.getpid()}/task").iterdir()
            for child in (task / "children").read_text().split()}


def test_the_reference_runs_beside_the_passes_and_ends_with_a_failing_compile(tmp_path, monkeypatch):
    """While the passes run, the example's onnxruntime child is already running; when the passes fail, the
    child is ended and waited for, and its exchange folder deleted, before the error reaches the caller."""
    import tvm_ext
    from tvm_ext.compile import pipeline
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    during_the_passes: dict[str, list] = {}
    before = children()

    def failing_passes(*args):  # no code generation worker exists yet: a new child is the reference's
        during_the_passes["children"] = sorted(children() - before)
        during_the_passes["folders"] = sorted(p.name for p in temporary.iterdir())
        raise CompileError(f"{model.name}: stopped by the test")

    monkeypatch.setattr(pipeline, "passes", failing_passes)
    with pytest.raises(CompileError, match="stopped by the test"):
        tvm_ext.compile(model, target="lowpower", out=tmp_path / "out")
    assert len(during_the_passes["children"]) == 1, during_the_passes
    assert [name.startswith("tvm_ext_reference.") for name in during_the_passes["folders"]] == [True]
    child = during_the_passes["children"][0]
    assert not Path(f"/proc/{child}").exists(), "the reference child was not ended and reaped"
    assert list(temporary.iterdir()) == []


FAKE_CC = """#!/bin/sh
# Records each compile (-c) in $MARKERS, then waits up to 10 s until two compiles have started; one that
# waited in vain leaves an "alone" file.
case " $* " in *" -c "*)
  touch "$MARKERS/started.$$"
  tries=0
  while [ "$(ls "$MARKERS" | grep -c started)" -lt 2 ]; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ]; then touch "$MARKERS/alone.$$"; break; fi
    sleep 0.1
  done;;
esac
exec cc "$@"
"""


def test_the_bundle_sources_compile_in_parallel_with_two_jobs(tmp_path, monkeypatch):
    """With jobs=2 two of the library's C files compile at once (the fake compiler waits for a second one,
    which with one job at a time never comes), and the library still builds and self-tests."""
    from packager import write_bundle
    from packager.build import build_bundle, selftest_bundle

    fake_cc, markers = fake_compiler(tmp_path, monkeypatch, FAKE_CC)
    bundle = hand_made_bundle(np.array([[-1.5, 7.0]], np.float32))
    bundle = replace(bundle, config=replace(bundle.config, cc=str(fake_cc)))
    folder = tmp_path / "bundle"
    folder.mkdir()
    write_bundle(folder, bundle)
    build_bundle(folder, bundle.config, jobs=2)
    assert len(list(markers.glob("started.*"))) == 3
    assert not list(markers.glob("alone.*")), "a compile ran alone: make ran one compiler at a time"
    assert selftest_bundle(folder, bundle)[0].passed
