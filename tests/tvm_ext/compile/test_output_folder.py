"""The output folder OUT: nothing of the user's is lost, whatever happens to OUT during or around a compile.

Without --force a compile fills OUT only by one rename that fails if OUT is no longer empty; with --force the
old OUT is renamed aside and deleted only once the new bundle is in place. A folder holding the model is never
OUT, nor is the working directory, the home folder or a folder holding either; OUT gets the permissions `mkdir`
gives; the folders created for OUT go again when the compile fails; and every problem with OUT is one line and
exit 2. The in-process tests replace the pipeline by a stub that writes a two-file bundle, so they test the
folder handling alone, in milliseconds.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO, run_cli
from tvm_ext.compile import CompileError, compile
from tvm_ext.compile import pipeline

ERROR_PREFIX = "tvm_ext.compile: error: "
MODEL_NAME = "model.tflite"


def stub_compile_to_folder(during=lambda staging: None):
    """A stand-in for pipeline.compile_to_folder: writes lib.a and bundle.tar.gz, calling `during` first."""

    def compile_to_folder(model, target, staging: Path, stage, options, checked=None):
        during(staging)
        (staging / "lib.a").write_text("library")
        (staging / "bundle.tar.gz").write_text("archive")
        return SimpleNamespace(plan=None, memory=None, ram=None, flash=None, library=staging / "lib.a",
                               archive=staging / "bundle.tar.gz", selftest=None, build=None)

    return compile_to_folder


def a_model(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / MODEL_NAME
    model.write_bytes(b"not read: the pipeline is a stub")
    return model


def leftovers(out: Path) -> list[Path]:
    """Staging folders and old copies beside OUT (all named `.<OUT name>.*`)."""
    return list(out.parent.glob(f".{out.name}.*"))


def test_a_file_put_into_out_during_the_compile_is_kept_and_the_compile_fails(monkeypatch, tmp_path):
    out = tmp_path / "out"
    model = a_model(tmp_path / "models")

    def user_writes_into_out(staging: Path) -> None:
        out.mkdir()
        (out / "notes.txt").write_text("mine")

    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder(user_writes_into_out))
    with pytest.raises(CompileError, match="was filled by something else during the compile"):
        compile(model, out=out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"
    assert not leftovers(out)


def test_forced_compile_replaces_out_and_leaves_no_old_copy(monkeypatch, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old bundle")
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    compile(a_model(tmp_path / "models"), out=out, force=True)
    assert sorted(p.name for p in out.iterdir()) == ["bundle.tar.gz", "lib.a"]
    assert not leftovers(out)


def test_forced_compile_whose_final_rename_fails_keeps_the_old_out(monkeypatch, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old bundle")
    real_rename = os.rename

    def rename_failing_for_the_new_bundle(source, destination, *args, **kwargs):
        if Path(destination) == out and (Path(source) / "lib.a").exists():
            raise OSError(errno.EIO, "Input/output error")
        real_rename(source, destination, *args, **kwargs)

    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    monkeypatch.setattr(os, "rename", rename_failing_for_the_new_bundle)
    with pytest.raises(CompileError, match="cannot move the bundle into"):
        compile(a_model(tmp_path / "models"), out=out, force=True)
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert not leftovers(out)


def model_own_folder(tmp_path: Path) -> tuple[Path, Path]:
    return a_model(tmp_path / "models"), tmp_path / "models"


def model_parent_folder(tmp_path: Path) -> tuple[Path, Path]:
    return a_model(tmp_path / "work" / "models"), tmp_path / "work"


def model_through_a_symlink(tmp_path: Path) -> tuple[Path, Path]:
    a_model(tmp_path / "real")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    return tmp_path / "linked" / MODEL_NAME, tmp_path / "real"


@pytest.mark.parametrize("layout", [model_own_folder, model_parent_folder, model_through_a_symlink],
                         ids=lambda layout: layout.__name__)
def test_forced_out_holding_the_model_is_refused_and_the_model_kept(layout, monkeypatch, tmp_path):
    model, out = layout(tmp_path)
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    with pytest.raises(CompileError, match="holds the model"):
        compile(model, out=out, force=True)
    assert model.read_bytes() == b"not read: the pipeline is a stub"
    assert not leftovers(out)


def a_file(tmp_path: Path) -> Path:
    (tmp_path / "out").write_text("a file of the user's")
    return tmp_path / "out"


def a_symlink_to_an_empty_folder(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "empty")
    return tmp_path / "out"


def under_proc(tmp_path: Path) -> Path:
    return Path("/proc/self/out")


def under_a_read_only_parent(tmp_path: Path) -> Path:
    return Path("/sys/out")  # sysfs refuses new folders even to root, unlike a chmod-ed folder


def below_a_file(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("")
    return tmp_path / "file" / "out"


@pytest.mark.parametrize("where", [a_file, a_symlink_to_an_empty_folder, under_proc, under_a_read_only_parent,
                                   below_a_file], ids=lambda where: where.__name__)
def test_every_out_problem_is_one_line_and_exit_2(where, shared_models, tmp_path):
    out = where(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    proc = run_cli(str(shared_models / "tflm/hello_world_float.tflite"), "-o", str(out))
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"{ERROR_PREFIX}hello_world_float.tflite: "), proc.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_two_compiles_into_one_out_keep_one_bundle_and_refuse_the_other(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "tvm_ext.compile", "--example", "-o", str(out)]
    first, second = (subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(2))
    results = sorted((proc.wait(timeout=600), proc.stderr.read()) for proc in (first, second))
    assert [code for code, _ in results] == [0, 2], results
    refusal = results[1][1]
    assert len(refusal.splitlines()) == 1 and refusal.startswith(f"{ERROR_PREFIX}example_kws_cnn.onnx: "), refusal
    assert (out / "libexample_kws_cnn.a").is_file() and (out / "manifest.json").is_file()
    assert not leftovers(out)


def umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@pytest.mark.parametrize("relative", [".", ".."])
def test_the_working_directory_and_the_folders_holding_it_are_never_out(relative, monkeypatch, tmp_path):
    """With --force, `-o .` renamed the working directory aside, deleted the user's files in it and left a
    mode-0700 folder in its place."""
    work = tmp_path / "project" / "work"
    work.mkdir(parents=True)
    (work / "notes.txt").write_text("mine")
    mode = work.stat().st_mode
    monkeypatch.chdir(work)
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    with pytest.raises(CompileError, match="the working directory"):
        compile(a_model(tmp_path / "models"), out=relative, force=True)
    assert (work / "notes.txt").read_text() == "mine" and work.stat().st_mode == mode
    assert not leftovers(work) and not leftovers(work.parent)


def test_the_home_folder_and_the_folders_holding_it_are_never_out(monkeypatch, tmp_path):
    home = tmp_path / "home" / "user"
    home.mkdir(parents=True)
    (home / "notes.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    for out, role in ((home, "is your home folder"), (tmp_path / "home", "holding your home folder"),
                      (Path("/"), "holding")):
        with pytest.raises(CompileError, match=role):
            compile(a_model(tmp_path / "models"), out=out, force=True)
    assert (home / "notes.txt").read_text() == "mine"


def test_out_gets_the_permissions_mkdir_gives_or_those_of_the_out_it_replaces(monkeypatch, tmp_path):
    """The staging folder came from mkdtemp, so every OUT ended as mode 0700."""
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder())
    compile(a_model(tmp_path / "models"), out=tmp_path / "new")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o777 & ~umask()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "old.txt").write_text("old bundle")
    (tmp_path / "old").chmod(0o750)
    compile(a_model(tmp_path / "models"), out=tmp_path / "old", force=True)
    assert stat.S_IMODE((tmp_path / "old").stat().st_mode) == 0o750


def test_folders_created_for_out_are_removed_when_the_compile_is_refused(monkeypatch, tmp_path):
    """Only those the compile created: a folder that was there, or that someone filled meanwhile, stays."""
    def refused(staging: Path) -> None:
        (tmp_path / "kept" / "new" / "filled" / "theirs.txt").write_text("theirs")
        raise CompileError("model.tflite: refused")

    (tmp_path / "kept").mkdir()
    monkeypatch.setattr(pipeline, "compile_to_folder", stub_compile_to_folder(refused))
    for out in (tmp_path / "kept" / "new" / "filled" / "out", tmp_path / "kept" / "a" / "b" / "out"):
        with pytest.raises(CompileError, match="refused"):
            compile(a_model(tmp_path / "models"), out=out)
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "kept").rglob("*")) == [
        "kept/new", "kept/new/filled", "kept/new/filled/theirs.txt"]
