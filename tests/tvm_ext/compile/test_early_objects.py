"""The library's order-free sources (kernels, weights) compile beside the memory planning with --jobs 2
(tvm_ext.compile.early_objects): the library is the one a plain build makes, an object whose files changed
is compiled again, and an interrupt while they compile leaves no compiler and no folder behind."""

from __future__ import annotations

import dataclasses
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

import target
from packager import build
from packager.build_files import BuildConfig, write_makefile
from packager.files import replace_file
from tvm_ext.compile import pipeline
from emulator.tools import missing_tools
from tvm_ext.compile.early_objects import EarlyObjects, compiling_early

WAIT_SECONDS = 60  # for a compiler on this shared, loaded 2-core machine


def wait_for(found, what: str):
    """Poll `found()` until it returns something true, at most WAIT_SECONDS; fail naming `what`."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        result = found()
        if result:
            return result
        time.sleep(0.05)
    pytest.fail(f"no {what} within {WAIT_SECONDS} s")


def running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def small_library(folder: Path, kernels_c: str, cc: str = "cc") -> dict[str, str]:
    """The early files of a model "m": a header, a kernels' source and the Makefile for `cc`."""
    return {"m_internal.h": "int m_kernel(void);\n", "m_kernels.c": '#include "m_internal.h"\n' + kernels_c,
            "Makefile": write_makefile("m", BuildConfig(cc=cc))}


def up_to_date(folder: Path, goal: str) -> bool:
    """Whether `make` takes `goal` as up to date (it would run no command for it)."""
    return subprocess.run(["make", "-q", goal], cwd=folder, capture_output=True).returncode == 0


def test_an_object_is_kept_when_the_packager_rewrote_the_same_files(tmp_path):
    """The packager writes every file again after the early compile (newer than the object): the object is
    kept and made up to date for the build's make."""
    sources = small_library(tmp_path, "int m_kernel(void) { return 1; }\n")
    with compiling_early(tmp_path, sources) as early:
        for name, text in sources.items():  # as write_bundle does, with the same text
            replace_file(tmp_path / name, text)
        assert early.settle() == ["m_kernels.o"]
    assert up_to_date(tmp_path, "m_kernels.o")


def test_an_object_is_deleted_when_a_file_it_was_made_from_changed(tmp_path):
    """The header's text changed after the early compile (make tracks no header): the object is deleted, and
    the build's make compiles the kernels again."""
    sources = small_library(tmp_path, "int m_kernel(void) { return 1; }\n")
    with compiling_early(tmp_path, sources) as early:
        (tmp_path / "m_internal.h").write_text("int m_kernel(void);\nint m_other(void);\n")
        assert early.settle() == []
    assert not (tmp_path / "m_kernels.o").exists()
    assert not up_to_date(tmp_path, "m_kernels.o")


def test_an_object_that_did_not_build_is_left_to_the_build(tmp_path):
    """A warning (an error with -Werror) in the kernels: no object is kept; the build's make reports it."""
    sources = small_library(tmp_path, "int m_kernel(void) { int unused; return 1; }\n")
    with compiling_early(tmp_path, sources) as early:
        assert early.settle() == []
    assert not (tmp_path / "m_kernels.o").exists()


SLOW_CC = """#!/bin/sh
# Records its pid in $MARKERS, then compiles nothing for 60 s.
echo $$ > "$MARKERS/cc.pid"
sleep 60
"""


def fake_compiler(tmp_path: Path, monkeypatch, script: str) -> tuple[Path, Path]:
    """An executable `script` in `tmp_path` (the fake compiler) and the folder "markers" it finds in $MARKERS."""
    markers = tmp_path / "markers"
    markers.mkdir()
    fake_cc = tmp_path / "fake-cc"
    fake_cc.write_text(script)
    fake_cc.chmod(fake_cc.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("MARKERS", str(markers))
    return fake_cc, markers


def test_leaving_the_block_ends_the_running_compilers(tmp_path, monkeypatch):
    fake_cc, markers = fake_compiler(tmp_path, monkeypatch, SLOW_CC)
    folder = tmp_path / "bundle"
    folder.mkdir()
    with pytest.raises(KeyboardInterrupt):
        with compiling_early(folder, small_library(folder, "int m_kernel(void) { return 1; }\n", str(fake_cc))) \
                as early:
            compiler = int(wait_for(lambda: (markers / "cc.pid").exists() and (markers / "cc.pid").read_text(),
                                    "compiler started"))
            raise KeyboardInterrupt
    assert [running(process.pid) for process in early.makes.values()] == [False]
    assert not running(compiler)


def test_the_kernels_compile_while_the_memory_is_planned_into_the_same_library(tmp_path, monkeypatch):
    """With jobs=2 the kernels' object exists (in the staging folder) before the planning ends; with jobs=1
    nothing is compiled before the build; both libraries (and archives) are byte-identical."""
    import tvm_ext
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    early_objects: dict[int, list[str]] = {}
    planning = pipeline.planning

    def watched_planning(plan, profile, io_in_arena=False):
        jobs = len(early_objects) + 1
        if jobs == 2:
            wait_for(lambda: len(list(tmp_path.glob("*/*.o"))) == 2, "kernels' and weights' objects during the planning")
        early_objects[jobs] = sorted(p.name for p in tmp_path.glob("*/*.o"))
        return planning(plan, profile, io_in_arena)

    monkeypatch.setattr(pipeline, "planning", watched_planning)
    bundles = [tvm_ext.compile(model, target="lowpower", out=tmp_path / f"jobs{jobs}", jobs=jobs) for jobs in (1, 2)]
    assert early_objects[1] == []
    assert early_objects[2] == [f"{EXAMPLE_NAME}_kernels.o", f"{EXAMPLE_NAME}_weights.o"]
    serial, parallel = (bundle.library.read_bytes() for bundle in bundles)
    assert serial == parallel
    assert bundles[0].files and [p.name for p in bundles[0].files] == [p.name for p in bundles[1].files]


def test_an_interrupt_while_the_kernels_compile_leaves_nothing(tmp_path, monkeypatch):
    """An interrupt during the planning, while the early compiler runs: it is ended, and neither the staging
    folder nor the output folder is left."""
    import tvm_ext
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    fake_cc, markers = fake_compiler(tmp_path, monkeypatch, SLOW_CC)
    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    profile = dataclasses.replace(target.resolve_profile("lowpower"), c_compiler=str(fake_cc))
    before = set(tmp_path.iterdir())
    compilers: list[int] = []

    def interrupted_planning(*args):
        compilers.append(int(wait_for(lambda: (markers / "cc.pid").exists() and (markers / "cc.pid").read_text(),
                                      "early compiler started")))
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "planning", interrupted_planning)
    with pytest.raises(KeyboardInterrupt):
        tvm_ext.compile(model, target=profile, out=tmp_path / "out", jobs=2)
    assert not running(compilers[0])
    assert set(tmp_path.iterdir()) == before
    assert os.listdir(markers) == ["cc.pid"]


@pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"), reason="no arm-none-eabi/QEMU here")
def test_on_an_emulated_board_the_self_test_links_the_early_library_objects(tmp_path, monkeypatch):
    """cortex-m4f with jobs=2: the library's objects of the kernels and weights are compiled beside the planning
    with their stack usage files and kept by the build, whose self-test ELF links those very objects (hard links
    in the cross build's folder, no second compile); the bundle's files, its library and its measurements are those of
    jobs=1."""
    import tvm_ext
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    kept: list[list[str]] = []
    settle = EarlyObjects.settle

    def watched_settle(self):
        kept.append(sorted(settle(self)))
        return kept[-1]

    monkeypatch.setattr(EarlyObjects, "settle", watched_settle)
    shared: list[list[str]] = []
    share = build.share_library_objects
    monkeypatch.setattr(build, "share_library_objects", lambda *args: shared.append(share(*args)) or shared[-1])
    bundles = [tvm_ext.compile(model, target="cortex-m4f", out=tmp_path / f"jobs{jobs}", jobs=jobs,
                               keep_cross_build=tmp_path / f"cross{jobs}") for jobs in (1, 2)]
    stems = (f"{EXAMPLE_NAME}_kernels", f"{EXAMPLE_NAME}_weights")
    assert kept == [[f"{stem}.o" for stem in stems]]
    library = sorted((*stems, f"{EXAMPLE_NAME}_model"))
    assert shared == [library, library]
    for jobs in (1, 2):  # the ELF's make compiled (-MMD: a .d file) only its own sources, the self-test's
        cross = tmp_path / f"cross{jobs}"
        assert sorted(path.stem for path in cross.glob("*.d")) == ["selftest"]
        assert all((cross / f"{stem}.su").is_file() for stem in library)
    serial, parallel = bundles
    assert serial.library.read_bytes() == parallel.library.read_bytes()
    assert [p.name for p in serial.files] == [p.name for p in parallel.files]
    assert all((serial.out_dir / p.name).read_bytes() == (parallel.out_dir / p.name).read_bytes()
               for p in serial.files if p.name != serial.archive.name)
