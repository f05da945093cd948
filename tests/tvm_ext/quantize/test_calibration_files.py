"""Calibration files are checked from what their .npy headers declare before any data is read, and their
values before they are used: one line (CalibrationError; exit 2 from the CLI), never an internal error, an
allocation of what a header claims, or a hang. Every hostile file is built here in a few bytes.

Before: a 1 KB .npz of 200,000 samples calibrated for minutes; an .npy header claiming 16 TiB and an .npz
member claiming 4 TiB were allocated; an .npy (even one named .npz) was an internal error; float64 values
beyond float32 became infinities; a FIFO blocked the compile; all-denormal samples gave a denormal input scale.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import models_dir
from fuzz_corpus import hang_guard
from tvm_ext.frontend import TensorSpec
from tvm_ext.quantize import ActivationQuant, CalibrationError, calibration, load_calibration

ONE_NUMBER = [TensorSpec("x", (1, 1), "float32")]


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """An .npy file's magic and header declaring `shape` of `descr`, without any data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False, "shape": shape})
    return header.getvalue()


def _refusal(path: Path, specs: list[TensorSpec] = ONE_NUMBER) -> str:
    with hang_guard(20), pytest.raises(CalibrationError) as raised:
        load_calibration(path, specs)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"calibration file {path.name}"), message
    return message


def test_more_samples_than_the_limit_are_refused_before_they_are_read(tmp_path):
    path = tmp_path / "many.npz"
    np.savez_compressed(path, x=np.zeros((200_000, 1), np.float32))  # about 1 KB
    assert path.stat().st_size < 4096
    assert f"200000 samples, more than the limit of {calibration.MAX_CALIBRATION_SAMPLES}" in _refusal(path)


def test_arrays_larger_than_the_byte_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(calibration, "MAX_CALIBRATION_BYTES", 1000)
    path = tmp_path / "wide.npz"
    np.savez(path, x=np.zeros((126, 1), np.float64))  # 1,008 bytes as float64, its wider type
    assert "hold 1008 bytes, more than the limit of 1000" in _refusal(path)
    np.savez(path, x=np.zeros((125, 1), np.float64))
    assert len(load_calibration(path, ONE_NUMBER).samples) == 125


def test_an_npy_header_claiming_16_tib_is_refused_without_allocating(tmp_path):
    path = tmp_path / "huge.npy"
    path.write_bytes(_npy_header((2**42, 1)))
    assert "declares [4398046511104, 1] float32, 17592186044416 bytes, but holds 0" in _refusal(path)


def test_an_npz_member_claiming_4_tib_is_refused_without_inflating_it(tmp_path):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", _npy_header((2**40, 1)) + bytes(64))
    assert "array 'x' declares [1099511627776, 1] float32, 4398046511104 bytes, but holds 64" in _refusal(path)


def test_an_npy_file_is_read_as_one_array_whatever_its_name(tmp_path):
    samples = np.arange(6, dtype=np.float32).reshape(6, 1)
    for name in ("samples.npy", "samples_named.npz"):
        path = tmp_path / name
        with path.open("wb") as file:
            np.save(file, samples)
        loaded = load_calibration(path, ONE_NUMBER).samples
        assert [sample[0].tolist() for sample in loaded] == [[[float(v)]] for v in range(6)]


@pytest.mark.parametrize(("values", "needle"), [
    (np.full((3, 1), 1e300), "values beyond float32's range (largest magnitude 1e+300)"),
    (np.array([[1.0], [np.nan]]), "non-finite values"),
    (np.array([[1], [2]], dtype=object), "holds Python objects"),
    (np.array([[True], [False]]), "values of type bool, not numbers"),
    (np.zeros((0, 1), np.float32), "needs arrays of shape (N, 1, 1) with N >= 1, got (0, 1)"),
])
def test_values_the_input_cannot_take_are_refused(tmp_path, values, needle):
    path = tmp_path / "bad.npz"
    np.savez(path, x=values)
    assert needle in _refusal(path)


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    path = tmp_path / "stream.npz"
    os.mkfifo(path)
    assert "is not a regular file" in _refusal(path)


def test_all_denormal_samples_give_normal_scales():
    """TFLite's kernels (and our model check) refuse a scale that is not a normal float32: a range of denormal
    width quantizes as a range of one value, scale 1."""
    assert ActivationQuant.of_range(0.0, 1e-40).scale == np.float32(1.0)
    assert ActivationQuant.of_range(-3e-39, 1e-40, "int16").scale == np.float32(1.0)
    assert ActivationQuant.of_range(0.0, 255 * 1.2e-38).scale == np.float32(1.2e-38)


def test_the_cli_refuses_a_hostile_calibration_file_in_one_line(tmp_path, cli_in_process):
    """The command's main in this process (`cli_in_process`): a new process would import TVM to read the model
    first (2.2 CPU-s measured)."""
    path = tmp_path / "huge.npy"
    path.write_bytes(_npy_header((2**42, 1, 1)))
    proc = cli_in_process(str(models_dir() / "tflm/hello_world_float.tflite"), "--quantize", "int8",
                          "--calibration", str(path), "-o", str(tmp_path / "out"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("tvm_ext.compile: error: hello_world_float.tflite: calibration file huge.npy: ")
    assert not (tmp_path / "out").exists()
