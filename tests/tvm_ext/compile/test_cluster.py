"""Compiles on a Dask distributed cluster (tvm_ext.compile.cluster): scripts/compile_many.py and `--scheduler` give the
bundles a local compile gives, and an unreachable scheduler is the user's error in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, example_model, run_cli
from test_subgraph_codegen import archive_members

MODELS = {"example_kws_cnn": example_model, "hello_world_int8": "tflm/hello_world_int8.tflite"}
TARGETS = ("lowpower", "cortex-m4f")


@pytest.mark.slow
def test_bundles_compiled_on_a_local_cluster_equal_the_serial_ones(compiled, shared_models, tmp_path):
    """Two models x two profiles fanned out by compile_many over a local cluster of two worker processes, and
    one more compile through the CLI's --scheduler: every archive holds the serial bundle's files, byte for
    byte."""
    from distributed import LocalCluster

    model_files = [example_model(tmp_path), shared_models / MODELS["hello_world_int8"]]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        many = subprocess.run([sys.executable, "scripts/compile_many.py", *map(str, model_files), "--targets",
                               ",".join(TARGETS), "-o", str(tmp_path / "many"),
                               "--scheduler", cluster.scheduler_address],
                              cwd=REPO, capture_output=True, text=True, timeout=900)
        single = run_cli("--example", "--target", "cortex-m4f", "-o", str(tmp_path / "single"),
                         "--scheduler", cluster.scheduler_address)
    assert many.returncode == 0, many.stderr
    assert single.returncode == 0, single.stderr
    assert "4 of 4 bundles" in many.stdout
    clustered = {(stem, target): tmp_path / "many" / stem / target for stem in MODELS for target in TARGETS}
    clustered["single"] = tmp_path / "single"
    for key, folder in clustered.items():
        stem, target = ("example_kws_cnn", "cortex-m4f") if key == "single" else key
        serial = compiled(MODELS[stem], target)
        expected = archive_members(serial.archive)
        got = archive_members(folder / serial.archive.name)
        assert got.keys() == expected.keys(), key
        assert [name for name in expected if got[name] != expected[name]] == [], key


def test_an_unreachable_scheduler_is_the_users_error_in_one_line(tmp_path, monkeypatch, capfd):
    from tvm_ext.compile import cluster
    from tvm_ext.compile.__main__ import main

    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 1)
    code = main(["--example", "--scheduler", "tcp://127.0.0.1:9", "-o", str(tmp_path / "out")])
    lines = capfd.readouterr().err.splitlines()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(
        "tvm_ext.compile: error: example_kws_cnn.onnx: cannot reach the Dask scheduler tcp://127.0.0.1:9"), lines
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


def test_jobs_and_a_scheduler_exclude_each_other(tmp_path):
    done = run_cli("--example", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:9", "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "not allowed with argument" in done.stderr


@pytest.mark.parametrize("relative", ["../escaped.txt", "/tmp/escaped.txt", "cortex_m/../../escaped.txt", "", ".",
                                      "m.h", "m.h/inside.c", "link/escaped.txt"])
def test_a_workers_file_outside_the_bundle_folder_is_refused(relative, tmp_path):
    """The client wrote each returned path as given: `..` and absolute paths wrote anywhere its user can. Refused
    too: a path written twice, through a file, or through a symbolic link (none of ours)."""
    from tvm_ext.compile.cluster import BundleFile, CompiledJob, write_compiled
    from tvm_ext.compile import CompileError

    folder = tmp_path / "staging"
    folder.mkdir()
    (folder / "link").symlink_to(tmp_path)
    files = {"m.h": BundleFile(b"header", 0o644), "cortex_m/startup.c": BundleFile(b"c", 0o644),
             relative: BundleFile(b"escaped", 0o4777)}
    if relative == "m.h":  # the same path twice, as a second entry can name it
        files = {"m.h": BundleFile(b"header", 0o644), "./m.h": BundleFile(b"escaped", 0o644)}
    with pytest.raises(CompileError, match="the Dask worker returned the bundle file"):
        write_compiled(folder, CompiledJob(None, files, ()), "m.onnx")
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/escaped.txt").exists()
    assert (folder / "m.h").read_bytes() == b"header"


def test_a_workers_files_are_written_inside_the_bundle_folder_without_special_permissions(tmp_path):
    from tvm_ext.compile.cluster import BundleFile, CompiledJob, write_compiled

    files = {"m.h": BundleFile(b"header", 0o644), "cortex_m/startup.c": BundleFile(b"c", 0o6777)}
    assert write_compiled(tmp_path, CompiledJob("result", files, ()), "m.onnx") == "result"
    assert (tmp_path / "cortex_m" / "startup.c").read_bytes() == b"c"
    assert (tmp_path / "cortex_m" / "startup.c").stat().st_mode & 0o7022 == 0
