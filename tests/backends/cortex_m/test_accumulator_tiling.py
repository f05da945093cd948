"""Register tiling of the MAC kernels' accumulators (tvm_ext/schedule/kernel_schedule.py): the tile the target profile
chooses, and tiled kernels computing exactly what the untiled ones compute."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import te  # noqa: E402

import tflite_int8_reference as ref  # noqa: E402
from target.resolve import resolve_profile  # noqa: E402
from test_int8_kernels import _channel_requant, _int8, _rng  # noqa: E402
from tvm_ext.kernels import (OutputStage, Rounding, WeightLayout, conv2d_int8, depthwise_conv2d_int8,  # noqa: E402
                             fully_connected_int8)
from tvm_ext.kernels.quant_params import ActivationRange, quantize_multiplier  # noqa: E402
from backends.schedules import kernel_schedules_of  # noqa: E402
from tvm_ext.schedule.kernel_schedule import inline_intermediates  # noqa: E402


@pytest.mark.parametrize("profile, tile", [("cortex-m0plus", 2), ("cortex-m4f", 4), ("cortex-m33", 4)])
def test_profile_chooses_the_tile(profile, tile):
    assert kernel_schedules_of(resolve_profile(profile)).output_channel_tile == tile


def _run_scheduled(build, inputs: list[np.ndarray], tile: int) -> tuple[np.ndarray, str]:
    """Build ``build(*placeholders)`` scheduled with ``tile`` for llvm, run it; the result and the TIR."""
    placeholders = [te.placeholder(a.shape, str(a.dtype), name=f"in{i}") for i, a in enumerate(inputs)]
    out = build(*placeholders)
    func = inline_intermediates(te.create_prim_func([*placeholders, out]), tile)
    lib = tvm.tirx.build(tvm.IRModule({"main": func}), target="llvm")
    dev = tvm.cpu()
    result = tvm.runtime.tensor(np.zeros([int(d) for d in out.shape], str(out.dtype)), dev)
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in inputs], result)
    return result.numpy(), func.script()


def test_tiled_conv_matches_reference_and_is_tiled():
    rng = _rng(21)
    x, w = _int8(rng, (1, 6, 5, 3)), _int8(rng, (3, 3, 3, 8))  # HWIO, 8 output channels: two tiles of 4
    bias = rng.integers(-20000, 20000, 8).astype(np.int32)
    multipliers, shifts = _channel_requant(rng, 8, Rounding.DOUBLE)
    stage = OutputStage(0, 0, 4, ActivationRange(), Rounding.DOUBLE)
    got, script = _run_scheduled(
        lambda a, b, c, m, s: conv2d_int8(a, b, c, input_zero_point=-7, output=stage, strides=(1, 1),
                                          padding=(1, 1, 1, 1), dilation=(1, 1), multiplier=m, shift=s,
                                          weight_layout=WeightLayout.OHWI),
        [x, np.ascontiguousarray(w.transpose(3, 0, 1, 2)), bias, multipliers, shifts], tile=4)
    want = ref.conv2d(x, w, bias, -7, 4, multipliers, shifts.astype(np.int64), (1, 1), (1, 1, 1, 1), (1, 1),
                      (-128, 127), False)
    np.testing.assert_array_equal(got, want)
    assert "T.unroll(4)" in script


def test_channel_count_the_tile_does_not_divide_stays_untiled():
    rng = _rng(22)
    x, w = _int8(rng, (1, 16)), _int8(rng, (6, 16))
    bias = rng.integers(-300, 300, 6).astype(np.int32)
    multiplier, shift = quantize_multiplier(0.01, Rounding.DOUBLE)
    stage = OutputStage(multiplier, shift, 0, ActivationRange(), Rounding.DOUBLE)
    got, script = _run_scheduled(lambda a, b, c: fully_connected_int8(a, b, c, input_zero_point=3, output=stage),
                                 [x, w, bias], tile=4)
    np.testing.assert_array_equal(got, ref.fully_connected(x, w, bias, 3, 0, multiplier, shift))
    assert "T.unroll" not in script


@pytest.mark.parametrize("profile", ["cortex-m4f", "cortex-m55"])
def test_a_row_shorter_than_the_dual_macs_group_stays_untiled(profile):
    """A FULLY_CONNECTED of fewer inputs than the dual MAC's group of four (hello_world's 1 -> 16) keeps its scalar
    loop nest on the DSP and Helium cores (`DualMacSchedules.keeps_scalar`): tiled, the helper would run its whole
    row in its scalar tail; a row of four takes the helper."""
    schedules = kernel_schedules_of(resolve_profile(profile))
    multiplier, shift = quantize_multiplier(0.01, Rounding.DOUBLE)
    stage = OutputStage(multiplier, shift, 0, ActivationRange(), Rounding.DOUBLE)
    scripts = {}
    for depth in (1, 3, 4):
        x, w, bias = (te.placeholder(shape, dtype, name=name) for shape, dtype, name in (
            ((1, depth), "int8", "x"), ((16, depth), "int8", "w"), ((16,), "int32", "bias")))
        out = fully_connected_int8(x, w, bias, input_zero_point=0, output=stage)  # the lowering's folded form
        scripts[depth] = inline_intermediates(te.create_prim_func([x, w, bias, out]), schedules.output_channel_tile,
                                              schedules.mac).script()
    assert all("dual_mac" not in scripts[d] and "T.unroll" not in scripts[d] for d in (1, 3)), scripts
    assert "dual_mac" in scripts[4] or "fc_rows" in scripts[4], scripts[4]
    # a depthwise window of three taps at one pixel reads each channel's own input: it keeps its tiles
    data, weight, bias = (te.placeholder(shape, dtype, name=name) for shape, dtype, name in (
        ((1, 3, 1, 16), "int8", "x"), ((3, 1, 16), "int8", "w"), ((16,), "int32", "bias")))
    out = depthwise_conv2d_int8(data, weight, bias, input_zero_point=0, output=stage, strides=(1, 1),
                                padding=(0, 0, 0, 0), dilation=(1, 1))
    depthwise = inline_intermediates(te.create_prim_func([data, weight, bias, out]), schedules.output_channel_tile,
                                     schedules.mac).script()
    assert "T.unroll(" in depthwise, depthwise
