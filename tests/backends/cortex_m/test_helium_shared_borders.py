"""The bundle's choice of Helium's 3x3 border copy (backends/cortex_m/schedules/helium_shared_borders.py:
``border_executions``, ``border_uses``, ``shared_borders``; backends/cortex_m/schedules/__init__.py:
``helium_bundle_choice``): a 3x3 window's border pixels call the copy that runs the interior's out-of-line copy on
its copied window where the bytes it saves pay, at the one price of code, for the instructions its calls add.

- The border call's executions: the iterations of the loops around it where the test leading to the interior fails,
  counted per loop variable; a test that reads two variables in one conjunct counts every iteration.
- The decision on facts alone: ds_cnn_w30_49x10's one kernel (30 channels, its interior calling the copy) takes
  it; mobilenet_v1_030_80's (border layers of 9 to 153 channels, none calling the interior copy, the copy's rolled
  tile needed) keep the own tile; with no interior caller the copy's bytes count against it.
- Compiled for cortex-m55 and run bit for bit with TFLite Micro under QEMU mps3-an547: a 3x3 layer of 30 channels
  calls the border copy running the interior's.
"""

from __future__ import annotations

import re

import pytest
from tvm import tirx

from backends.cortex_m.schedules.depthwise_tiles import BORDER_OPS, KernelUse, SharedTiles
from backends.cortex_m.schedules.helium_shared_borders import BORDER_COST, border_executions, shared_borders

I32_3X3 = ("3x3", "int32")


def _pixels(condition_of) -> tirx.Stmt:
    """A 25x5 pixel loop nest whose body is ``if (condition_of(y, x)) nothing else the 3x3 border call``."""
    y, x = tirx.Var("y", "int32"), tirx.Var("x", "int32")
    border = tirx.Evaluate(tirx.call_intrin("int32", BORDER_OPS[("int32", "3x3")], tirx.const(30, "int32")))
    body = tirx.IfThenElse(condition_of(y, x), tirx.Evaluate(tirx.const(0, "int32")), border)
    inner = tirx.For(x, tirx.const(0, "int32"), tirx.const(5, "int32"), tirx.ForKind.SERIAL, body)
    return tirx.For(y, tirx.const(0, "int32"), tirx.const(25, "int32"), tirx.ForKind.SERIAL, inner)


def _executions(stmt: tirx.Stmt) -> list[int]:
    return [times for _, times in border_executions(stmt, {BORDER_OPS[("int32", "3x3")]})]


def test_the_border_call_runs_where_the_interior_test_fails():
    one = tirx.const(1, "int32")
    interior = _pixels(lambda y, x: tirx.And(tirx.And(tirx.LE(one, y), tirx.LT(y, tirx.const(24, "int32"))),
                                             tirx.And(tirx.LE(one, x), tirx.LT(x, tirx.const(4, "int32")))))
    assert _executions(interior) == [25 * 5 - 23 * 3]
    # one conjunct reading both variables: every pixel counted (an upper bound)
    assert _executions(_pixels(lambda y, x: tirx.LT(y + x, tirx.const(20, "int32")))) == [125]


def _choice(border: tuple, interior: tuple = (), callers: frozenset = frozenset()) -> frozenset:
    tiles = SharedTiles(((I32_3X3, interior),), ((I32_3X3, callers),) if callers else ())
    return shared_borders({I32_3X3: border}, tiles)


def test_a_kernel_whose_interior_calls_the_copy_takes_the_border_running_it():
    # ds_cnn_w30_49x10: 56 border pixels of 2 tiles, called four times (measured 640 B less, 43,088 instructions more)
    use = KernelUse("dw", calls=4, pixels=56, channels=30, taps=9)
    assert _choice((use,), (use,), frozenset({"dw"})) == {I32_3X3}
    # without an interior caller the copy's bytes count against it
    assert _choice((use,)) == frozenset()


def test_many_border_tiles_of_small_layers_keep_the_own_tile():
    # mobilenet_v1_030_80's stride-1 layers (border pixels, channels); none of their interiors calls the copy
    uses = tuple(KernelUse(f"dw{index}", calls, pixels, channels, 9) for index, (calls, pixels, channels)
                 in enumerate([(1, 156, 9), (1, 76, 38), (1, 36, 76), (5, 16, 153)]))
    assert _choice(uses, uses[1:], frozenset({"dw1", "dw2", "dw3"})) == frozenset()
    # mobilenet's 20x20x38 layer alone (no rolled tile, 228 border tiles): 568 B for 22,800 instructions pay
    assert _choice(uses[1:2], uses[1:], frozenset({"dw1", "dw2", "dw3"})) == {I32_3X3}
    assert (BORDER_COST.own - BORDER_COST.shared) * 100 > 228 * BORDER_COST.tile_call


pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from test_depthwise_border_regions import SAME, _depthwise_model  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle  # noqa: E402


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
def test_a_30_channel_layer_runs_the_interior_copy_at_its_border_bit_exactly(tmp_path):
    _, kernels = bit_exact_bundle(tmp_path, "border", _depthwise_model(30, 5, (6, 5), [(3, 1, 1, SAME)]),
                                  "cortex-m55", "mps3-an547")
    calls = re.findall(r"_depthwise_(tiles3x3|border3x3_shared)_s8(?:_b16)?\(", kernels)
    assert calls == ["tiles3x3", "border3x3_shared"], kernels
