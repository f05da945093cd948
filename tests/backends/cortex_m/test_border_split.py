"""The padded border of int8 CONV_2D and DEPTHWISE_CONV_2D split from the interior (tvm_ext/schedule/border_split.py):
awkward windows (odd image sizes, a 3x4 window, stride 2, dilation 2, depth multiplier 2, SAME padding whose
pads differ top/bottom and left/right) run bit-exactly with TFLite Micro on cortex-m4f under QEMU and in the
host build of the same bundle, and each padded kernel asks once per output pixel whether its window is inside
the image: the interior branch has no bounds test (on the DSP core a tiled convolution's interior is the dual
MAC call). On the DSP core a border of at most 9 rectangles is cut into them instead (tvm_ext/schedule/border_regions.py):
no test reads a tap loop at all.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_dual_mac import _strict_build, bit_exact_on_cortex_m4f  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm import ir, te, tirx  # noqa: E402
from tvm_ext.kernels.conv import depthwise_conv2d_int8  # noqa: E402
from tvm_ext.kernels.fixed_point import Rounding  # noqa: E402
from tvm_ext.kernels.quant_params import ActivationRange  # noqa: E402
from tvm_ext.kernels.requantize import OutputStage  # noqa: E402
from tvm_ext.schedule.kernel_schedule import inline_intermediates  # noqa: E402
from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES  # noqa: E402
from tvm_ext.tir.tir_walk import vars_read, walk  # noqa: E402

SAME = 0  # tflite.Padding
IMAGE = (9, 8)  # odd height, even width: SAME pads of stride 2 differ on the two sides


def _same_output(size: int, stride: int) -> int:
    return -(-size // stride)


def _padded_model(depthwise: bool, channels: int, cases: list[tuple[int, int, int, int, int]], seed: int) -> bytes:
    """One int8 input [1, 9, 8, channels] (zero point -3) and one SAME-padded operator per case (output
    channels or depth multiplier, kernel height, kernel width, stride, dilation), each a model output."""
    rng = np.random.default_rng(seed)
    model = Model([Tensor("input", (1, *IMAGE, channels), "int8", Quantization((0.05,), (-3,)))], [], (0,), ())
    for index, (width, kh, kw, stride, dilation) in enumerate(cases):
        out_channels = channels * width if depthwise else width
        scales = tuple(0.004 + 0.001 * (o % 5) for o in range(out_channels))
        shape = (1, kh, kw, out_channels) if depthwise else (out_channels, kh, kw, channels)
        weights = rng.integers(-127, 128, shape).astype(np.int8)
        bias = rng.integers(-3000, 3000, out_channels).astype(np.int32)
        axis = 3 if depthwise else 0
        out_shape = (1, _same_output(IMAGE[0], stride), _same_output(IMAGE[1], stride), out_channels)
        first = len(model.tensors)
        model.tensors += [
            Tensor(f"op{index}/weights", shape, "int8", Quantization(scales, (0,) * out_channels, axis), weights),
            Tensor(f"op{index}/bias", (out_channels,), "int32",
                   Quantization(tuple(0.05 * s for s in scales), (0,) * out_channels, 0), bias),
            Tensor(f"op{index}/output", out_shape, "int8", Quantization((0.3,), (5,)))]
        fields = {"Padding": SAME, "StrideW": stride, "StrideH": stride, "DilationWFactor": dilation,
                  "DilationHFactor": dilation}
        if depthwise:
            fields["DepthMultiplier"] = width
        options = Options("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields)
        kind = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        model.operators.append(Operator(kind, (0, first, first + 1), (first + 2,), options, 3))
        model.outputs += (first + 2,)
    return build(model)


# (output channels or depth multiplier, kernel height, kernel width, stride, dilation)
WINDOWS = [(2, 3, 4, 1, 1), (2, 3, 3, 2, 1), (2, 3, 3, 1, 2), (2, 5, 3, 1, 1)]
MODELS = {
    # 5 input channels, 8 output channels (two tiles of four: the interior is the dual MAC on the m4f).
    "conv": lambda: _padded_model(False, 5, [(8, *window[1:]) for window in WINDOWS], seed=11),
    # 3 input channels, depth multiplier 2: 6 output channels, an odd count of pairs.
    "depthwise": lambda: _padded_model(True, 3, WINDOWS, seed=12),
    # 8 input channels, depth multiplier 1: tiled by four, the depthwise MAC helper on the m4f.
    "depthwise_tiled": lambda: _padded_model(True, 8, [(1, *window[1:]) for window in WINDOWS], seed=13),
}


def _kernel_bodies(kernels_c: str) -> dict[str, list[str]]:
    """Each function of the kernels' C file, by name, as its lines."""
    bodies: dict[str, list[str]] = {}
    name = None
    for line in kernels_c.splitlines():
        match = re.match(r"void (\w+)\(", line)
        if match:
            name = match.group(1)
            bodies[name] = []
        elif name is not None:
            bodies[name].append(line)
            if line == "}":
                name = None
    return bodies


def kernels_bit_exact_everywhere(tmp_path, name: str, model_bytes: bytes) -> dict[str, list[str]]:
    """The kernels of the model's cortex-m4f bundle (``_kernel_bodies``), after checking that it matches TFLite
    Micro under QEMU and in its host build, and builds warning-free for both."""
    board = bit_exact_on_cortex_m4f(tmp_path, name, model_bytes)
    _strict_build(board.out_dir, tmp_path / "arm", [])  # the DSP helpers, warning-free with arm-none-eabi-gcc
    host = _strict_build(board.out_dir, tmp_path / "host", ["CC=gcc", "CFLAGS=-std=c99 -O2", "LDFLAGS="])
    assert "PASS" in host.stdout, host.stdout
    return _kernel_bodies((board.out_dir / f"{board.plan.model}_kernels.c").read_text())


def _interior_branch(body: list[str]) -> list[str]:
    """The lines of the first `if` of ``body`` that tests the output pixel alone and holds no other `if` (the
    interior's branch; a DSP core's pair start tests the column's parity first), up to its `} else {` at the
    same indentation; [] where there is none."""
    for start, line in enumerate(body):
        if not line.lstrip().startswith("if (") or not _pixel_test(line) <= {"y", "x"}:
            continue
        indent = line[: len(line) - len(line.lstrip())]
        end = body.index(f"{indent}}} else {{", start) if f"{indent}}} else {{" in body[start:] else len(body)
        branch = body[start + 1:end]
        if not any("if (" in inner for inner in branch):
            return branch
    return []


def _variables(test: str) -> set[str]:
    """The names a C test reads, the DSP kernels' likely-hint wrapper (`<prefix>_depthwise_likely((int32_t)(...))
    != 0`, backends.cortex_m.schedules.depthwise_tiles.DSP_LIKELY_OP) left out."""
    return {name for name in re.findall(r"[A-Za-z_]\w*", test) if name != "int32_t" and not name.endswith("_likely")}


def _pixel_test(line: str) -> set[str]:
    """The variables the test of an `if (...)` line compares."""
    return _variables(line.split("if", 1)[1])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_padded_kernels_split_their_border_and_stay_bit_exact(tmp_path, name):
    kernels = kernels_bit_exact_everywhere(tmp_path, name, MODELS[name]())
    convolutions = {kernel: body for kernel, body in kernels.items() if "conv" in kernel}
    assert len(convolutions) == len(WINDOWS), sorted(kernels)
    for kernel, body in convolutions.items():
        first_if = next(line for line in body if line.lstrip().startswith("if ("))
        # The first test is the pixel's: it compares the output row and column loops with constants only.
        assert _pixel_test(first_if) <= {"y", "x"}, (kernel, first_if)
        helpers = (("dual_mac_s8x", "dual_mac_q15x", "conv_tiles_s8x4", "pair_tiles_s8") if name == "conv"
                   else ("depthwise_mac_s8x4", "depthwise_tiles") if name == "depthwise_tiled" else ())
        # The dual MAC of one pixel (dual_mac_s8x4, or its channel tiles' fused call conv_tiles_s8x4,
        # backends.cortex_m.schedules.conv_tiles) or of an interior pair (dual_mac_q15x2x4 on its widened
        # windows, backends.cortex_m.schedules.pair_q15, or its channel tiles' fused call pair_tiles_s8,
        # backends.cortex_m.schedules.pair_tiles); a depthwise interior's window calls, or its fused
        # tiles (backends.cortex_m.schedules.depthwise_tiles).
        tests = [_pixel_test(line) for line in body if line.lstrip().startswith("if (")]
        if all(test <= {"y", "x"} for test in tests):
            # Cut into rectangles of the border (tvm_ext.schedule.border_regions): the tests pick one, none is per tap.
            interior = body
        else:
            interior = _interior_branch(body)
            assert interior and not any("if (" in line for line in interior), (kernel, interior)
        if helpers and "_d2_" not in kernel:  # a dilated window's taps are not one contiguous run
            assert any(helper in line for line in interior for helper in helpers), kernel


def _scheduled_depthwise(image: tuple[int, int], kernel: tuple[int, int], dual_mac: bool = True) -> tirx.PrimFunc:
    """A padded int8 depthwise kernel (8 channels, pads of 1 on every side) scheduled as for cortex-m4f (or,
    without ``dual_mac``, for a core without the DSP extension)."""
    data = te.placeholder((1, *image, 8), "int8", name="data")
    weight = te.placeholder((*kernel, 8), "int8", name="weight")
    bias = te.placeholder((8,), "int32", name="bias")
    stage = OutputStage(1 << 30, 0, 5, ActivationRange(-128, 127), next(iter(Rounding)))
    out = depthwise_conv2d_int8(data, weight, bias, input_zero_point=-3, output=stage, strides=(1, 1),
                                padding=(1, 1, 1, 1), dilation=(1, 1), zero_point_in_bias=True)
    return inline_intermediates(te.create_prim_func([data, weight, bias, out]), 4, DUAL_MAC_SCHEDULES if dual_mac else None)


def _statements(node, kind) -> list:
    """Every node of ``kind`` under ``node``."""
    return [n for n in walk(node) if isinstance(n, kind)]


def _guarded_taps(node) -> list:
    """The if_then_else calls under ``node``: the guarded taps."""
    return [call for call in _statements(node, ir.Call) if call.op.name == "prim.if_then_else"]


def test_interior_tir_reads_taps_unguarded():
    """In the TIR of a core without the DSP extension: no tap is guarded per MAC; the pixel's branch (the
    outermost) has no test in its interior and one per tap in its border."""
    func = _scheduled_depthwise((7, 6), (3, 3), dual_mac=False)
    assert not _guarded_taps(func.body)
    pixel = _statements(func.body, tirx.IfThenElse)[0]
    assert not _statements(pixel.then_case, tirx.IfThenElse)
    assert len(_statements(pixel.else_case, tirx.IfThenElse)) == 1


def test_dsp_core_tir_tests_no_tap():
    """On a DSP core the border is cut into rectangles of pixels (tvm_ext.schedule.border_regions): no tap is guarded
    and no test reads a tap loop; with pads of 1, the output row picks one of 3 row ranges (2 tests), then
    the column one of 3 column ranges (2 tests in each)."""
    func = _scheduled_depthwise((7, 6), (3, 3))
    assert not _guarded_taps(func.body)
    tests = _statements(func.body, tirx.IfThenElse)
    assert all({var.name for var in vars_read(test.condition)} <= {"y", "x"} for test in tests), tests
    assert len(tests) == 2 + 3 * 2


def test_kernel_without_interior_is_left_as_it_was():
    """A 3x3 window on a 1x1 image overhangs at every pixel: no pixel is interior, nothing is split."""
    assert not _statements(_scheduled_depthwise((1, 1), (3, 3), dual_mac=False).body, tirx.IfThenElse)


def test_dsp_core_kernel_without_interior_is_one_rectangle():
    """On a DSP core the same pixel is one rectangle of the border: its image tap (the centre) and its padded
    taps, no test at all and no guarded tap left."""
    func = _scheduled_depthwise((1, 1), (3, 3))
    assert not _statements(func.body, tirx.IfThenElse) and not _guarded_taps(func.body)
