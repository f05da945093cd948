"""The dual 16-bit MAC (SMLAD) of DSP cores (backends/cortex_m/schedules/dual_mac.py, backends/cortex_m/helpers/dual_mac_c.py): int8 CONV_2D and
FULLY_CONNECTED compiled for cortex-m4f run under QEMU bit-exactly with TFLite Micro on awkward shapes (odd
channel counts and reduction lengths that break four-byte loads: the helper's portable tail), and the
kernels really take the SMLAD path (the disassembly holds smlad). The host build of the same bundle (the
portable C of the helper) must give the same bits.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import STRICT_WARNINGS  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tflite_models import fully_connected_model  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SAME, VALID = 0, 1  # tflite.Padding
OBJDUMP = "arm-none-eabi-objdump"


def _conv_model(channels: int, cases: list[tuple[int, int, int, int, int]], seed: int = 3,
                dilation: tuple[int, int] = (1, 1)) -> bytes:
    """One int8 input [1, 7, 6, channels] (zero point -3) and one CONV_2D per case (output channels, kernel
    height, kernel width, stride, padding), each a model output, per-channel weights, every kernel dilated by
    ``dilation`` (rows, columns)."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, 7, 6, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    for index, (out_channels, kh, kw, stride, padding) in enumerate(cases):
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
        weights = rng.integers(-127, 128, (out_channels, kh, kw, channels)).astype(np.int8)
        bias = rng.integers(-3000, 3000, out_channels).astype(np.int32)
        span_h, span_w = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
        out_h = -(-7 // stride) if padding == SAME else (7 - span_h) // stride + 1
        out_w = -(-6 // stride) if padding == SAME else (6 - span_w) // stride + 1
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"conv{index}/weights", weights.shape, "int8", Quantization(scales, (0,) * out_channels, 0), weights),
            Tensor(f"conv{index}/bias", (out_channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0), bias),
            Tensor(f"conv{index}/output", (1, out_h, out_w, out_channels), "int8", Quantization((0.3,), (5,)))]
        options = Options("Conv2DOptions", {"Padding": padding, "StrideW": stride, "StrideH": stride,
                                            "DilationWFactor": dilation[1], "DilationHFactor": dilation[0]})
        model.operators.append(Operator("CONV_2D", (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


def _functions_with(library, instruction: str) -> set[str]:
    """The functions of the static library whose disassembly holds `instruction`."""
    listing = subprocess.run([OBJDUMP, "-d", str(library)], check=True, capture_output=True, text=True).stdout
    found, function = set(), None
    for line in listing.splitlines():
        if line.endswith(">:"):
            function = line.split("<", 1)[1][:-2]
        elif function and f"\t{instruction}\t" in line:
            found.add(function)
    return found


MODELS = {
    # 7 input channels: a 1x1 reduction of one word and three tail bytes; 3x3 and 2x3 windows of 21 and 14
    # contiguous bytes per row, row starts at odd addresses; stride 2.
    "conv": lambda: _conv_model(7, [(12, 1, 1, 1, VALID), (8, 3, 3, 1, VALID), (8, 2, 3, 2, VALID)]),
    # 13 input units, two rows: the second row starts at an odd address.
    "dense": lambda: fully_connected_model((2, 13), 12, keep_num_dims=False, seed=5),
}


@pytest.mark.skipif(shutil.which(OBJDUMP) is None, reason="arm-none-eabi binutils are not installed")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_dual_mac_kernels_are_bit_exact_on_cortex_m4f_and_use_smlad(tmp_path, name):
    board = bit_exact_on_cortex_m4f(tmp_path, name, MODELS[name]())
    kernels = _functions_with(board.out_dir / f"lib{board.plan.model}.a", "smlad")
    assert kernels, "no kernel of the cortex-m4f bundle executes SMLAD"
    header = (board.out_dir / f"{board.plan.model}_internal.h").read_text()
    assert "__smlad" in header and "#include <arm_acle.h>" in header
    _strict_build(board.out_dir, tmp_path / "arm", [])  # the SMLAD path, warning-free with arm-none-eabi-gcc
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout  # the portable path of the same C, on the host


def bit_exact_on_cortex_m4f(tmp_path, name: str, model_bytes: bytes):
    """The model compiled for cortex-m4f (its bundle), after checking that its self-test ran under QEMU and
    matched TFLite Micro exactly."""
    model = tmp_path / f"{name}.tflite"
    model.write_bytes(model_bytes)
    board = compile(model, "cortex-m4f", tmp_path / "m4f")
    assert board.selftest.passed and board.selftest.where.startswith("mps2-"), board.selftest.output
    assert set(board.selftest.max_errors) == {0}
    return board


def _strict_build(bundle_dir, work_dir, make_arguments: list[str]) -> subprocess.CompletedProcess:
    """Build a copy of the bundle with -Wconversion -Wshadow -Werror on top of its -Wall -Wextra (raises on a
    warning); on the host (``CC=gcc``) also run its self-test and return that run."""
    copy = work_dir / bundle_dir.name
    shutil.copytree(bundle_dir, copy)
    subprocess.run(["make", "-s", "clean"], cwd=copy, check=True)
    host = "CC=gcc" in make_arguments
    subprocess.run(["make", "-s", "selftest" if host else "all", *make_arguments, "AR=ar" if host else "AR=arm-none-eabi-ar", f"EXTRA_CFLAGS={STRICT_WARNINGS}"], cwd=copy, check=True,
                   capture_output=True, text=True)
    if not host:
        return subprocess.CompletedProcess([], 0, "", "")
    return subprocess.run(["./selftest"], cwd=copy, capture_output=True, text=True)


def test_padded_convolution_calls_the_dual_mac_in_its_interior(tmp_path):
    """A SAME-padded window reads zero points outside the image: its border pixels test each tap, its interior
    (tvm_ext.schedule.border_split) calls the dual MAC without a test: one fused call over the pixel's channel
    tiles (conv_tiles_s8x4: the dual MAC's sums requantized), as the border pixels do on their copied windows."""
    board = bit_exact_on_cortex_m4f(tmp_path, "same", _conv_model(5, [(8, 3, 3, 1, SAME)]))
    kernels_c = (board.out_dir / f"{board.plan.model}_kernels.c").read_text()
    interior, border = kernels_c.split("} else {", 1)
    assert interior.count("if (") == 1  # the pixel's test only: no tap is tested in the interior
    assert interior.count("_conv_tiles_s8x4_b16(") == 1 == border.count("_conv_tiles_s8x4_b16(")
    assert "_dual_mac_s8x4(" not in kernels_c  # every pixel's tiles are the fused call
