"""A statement both branches of a test end with runs once after the test (backends/cortex_m/schedules/common_tails.py):
the rewrite on small TIR kernels (a copied window's call, nested tests, branches that differ at the end), and the
Helium schedules' use of it on a stem convolution whose windows are all copied (one fused call per pixel, not
two inlined copies), bit-exact with TFLite Micro under QEMU mps3-an547."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import tirx
from tvm.script import tirx as T

from backends.cortex_m.schedules.common_tails import common_tails
from backends.cortex_m.schedules.conv_tiles import (CHOOSE_OP, CONV_TILES_OPS, HELIUM_TAIL_CHOICES,
                                                   SHARED_CONV_TILES_OPS)
from backends.riscv.schedules.mac import CHOOSE_OP as RISCV_CHOOSE_OP
from backends.riscv.schedules.mac import MAC_OP, RISCV_TAIL_CHOICES
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build


def test_the_same_last_call_of_both_branches_runs_once_after_the_test() -> None:
    @T.prim_func(s_tir=True)
    def before(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i in range(8):
            if i < 4:
                window[0] = x[i]
                T.evaluate(T.call_extern("int32", "f", T.address_of(out[i]), T.address_of(window[0])))
            else:
                window[0] = T.int8(0)
                T.evaluate(T.call_extern("int32", "f", T.address_of(out[i]), T.address_of(window[0])))

    @T.prim_func(s_tir=True)
    def after(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i in range(8):
            if i < 4:
                window[0] = x[i]
            else:
                window[0] = T.int8(0)
            T.evaluate(T.call_extern("int32", "f", T.address_of(out[i]), T.address_of(window[0])))

    tvm.ir.assert_structural_equal(common_tails(before), after.with_attr("global_symbol", "before"))


def test_a_branch_that_is_only_the_common_statement_leaves_the_other_under_the_negated_test() -> None:
    @T.prim_func(s_tir=True)
    def before(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")  # (a kernel's root block)
        for i in range(8):
            if i < 4:
                T.evaluate(T.call_extern("int32", "f", T.address_of(out[i])))
            else:
                if i < 6:
                    out[i] = x[i]
                    T.evaluate(T.call_extern("int32", "f", T.address_of(out[i])))
                else:
                    T.evaluate(T.call_extern("int32", "f", T.address_of(out[i])))

    @T.prim_func(s_tir=True)
    def after(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i in range(8):
            if not i < 4:
                if i < 6:
                    out[i] = x[i]
            T.evaluate(T.call_extern("int32", "f", T.address_of(out[i])))

    tvm.ir.assert_structural_equal(common_tails(before), after.with_attr("global_symbol", "before"))


def test_branches_ending_differently_stay() -> None:
    @T.prim_func(s_tir=True)
    def func(x: T.Buffer((8,), "int8"), out: T.Buffer((8,), "int8")):
        window = T.sblock_alloc_buffer((4,), "int8")
        for i in range(8):
            window[0] = x[i]
            if i < 4:
                T.evaluate(T.call_extern("int32", "f", T.address_of(out[i]), 1))
            else:
                T.evaluate(T.call_extern("int32", "f", T.address_of(out[i]), 2))

    tvm.ir.assert_structural_equal(common_tails(func), func)


def test_a_last_statement_using_what_both_branches_bind_stays() -> None:
    """Both branches bind the same variable (one Var object, so their last statements are structurally equal) and
    end with a call that reads it: after the test the call would be out of the binding's scope."""
    i, offset = tirx.Var("i", "int32"), tirx.Var("offset", "int32")

    def branch(value: int) -> tirx.Stmt:
        return tirx.SeqStmt([tirx.Bind(offset, tirx.IntImm("int32", value)),
                             tirx.Evaluate(tirx.call_extern("int32", "f", i, offset))])

    test = tirx.IfThenElse(i < 4, branch(1), branch(2))
    func = tirx.PrimFunc([], tirx.For(i, 0, 8, tirx.ForKind.SERIAL, test))

    tvm.ir.assert_structural_equal(common_tails(func), func)


TILES = CONV_TILES_OPS["int32"]


@pytest.mark.parametrize("tiles", [TILES, SHARED_CONV_TILES_OPS["int32"]], ids=["inlined", "shared"])
def test_an_interior_and_a_border_call_of_the_fused_tiles_become_one_call_choosing_its_input(tiles: str) -> None:
    """Before: the interior pixel's call reads its 3 rows of 6 inputs in place (row stride 12), the border pixel's
    its copied window (one run of 18). Expected: the copy split into the same 3 rows of 6 (row stride 6), then one
    call after the test, its input the choice of the two addresses and its row stride the choice of 12 and 6: a call
    of the fused tiles' one out-of-line copy (its stride read at run time either way); the same where both calls
    were of that copy already (a kernel the bundle's choice gives it: backends/cortex_m/schedules/
    shared_conv_tiles.py)."""

    @T.prim_func(s_tir=True)
    def before(x: T.Buffer((48,), "int8"), w: T.Buffer((72,), "int8"), b: T.Buffer((4,), "int32"),
               m: T.Buffer((4,), "int32"), sh: T.Buffer((4,), "int8"), out: T.Buffer((16,), "int8")):
        window = T.sblock_alloc_buffer((18,), "int8")
        for i in range(4):
            if 1 <= i and i < 3:
                T.evaluate(T.call_intrin("int32", tiles, T.address_of(out[i * 4]), T.address_of(x[i * 6 - 6]),
                                         T.address_of(w[0]), T.address_of(b[0]), T.address_of(m[0]),
                                         T.address_of(sh[0]), 3, 12, 18, 3, 6, 4))
            else:
                for k in range(18):
                    window[k] = T.int8(-128)
                T.evaluate(T.call_intrin("int32", tiles, T.address_of(out[i * 4]), T.address_of(window[0]),
                                         T.address_of(w[0]), T.address_of(b[0]), T.address_of(m[0]),
                                         T.address_of(sh[0]), 3, 18, 18, 1, 18, 4))

    @T.prim_func(s_tir=True)
    def after(x: T.Buffer((48,), "int8"), w: T.Buffer((72,), "int8"), b: T.Buffer((4,), "int32"),
              m: T.Buffer((4,), "int32"), sh: T.Buffer((4,), "int8"), out: T.Buffer((16,), "int8")):
        window = T.sblock_alloc_buffer((18,), "int8")
        for i in range(4):
            if not (1 <= i and i < 3):
                for k in range(18):
                    window[k] = T.int8(-128)
            T.evaluate(T.call_intrin("int32", SHARED_CONV_TILES_OPS["int32"], T.address_of(out[i * 4]),
                                     T.call_intrin("handle", CHOOSE_OP, 1 <= i and i < 3, T.address_of(x[i * 6 - 6]),
                                                   T.address_of(window[0])),
                                     T.address_of(w[0]), T.address_of(b[0]), T.address_of(m[0]),
                                     T.address_of(sh[0]), 3, T.Select(1 <= i and i < 3, 12, 6), 18, 3, 6, 4))

    tvm.ir.assert_structural_equal(common_tails(before, HELIUM_TAIL_CHOICES), after.with_attr("global_symbol", "before"))
    tvm.ir.assert_structural_equal(common_tails(before), before)  # (without the choices: two calls, as before)


@pytest.mark.parametrize("zero_point, rows, row_len", [(3, 2, 9), (4, 3, 6)])
def test_fused_calls_that_differ_where_no_choice_is_allowed_stay(zero_point: int, rows: int, row_len: int) -> None:
    """(3, 2, 9): the border call's window is no single run (two rows of 9, 12 apart), so it cannot take the interior
    call's 3 rows of 6; (4, 3, 6): the calls differ in the zero point, which the choice does not allow. Both calls
    stay."""

    @T.prim_func(s_tir=True)
    def func(x: T.Buffer((48,), "int8"), w: T.Buffer((72,), "int8"), b: T.Buffer((4,), "int32"),
             m: T.Buffer((4,), "int32"), sh: T.Buffer((4,), "int8"), out: T.Buffer((16,), "int8")):
        for i in range(4):
            if i < 2:
                T.evaluate(T.call_intrin("int32", TILES, T.address_of(out[i * 4]), T.address_of(x[i * 6]),
                                         T.address_of(w[0]), T.address_of(b[0]), T.address_of(m[0]),
                                         T.address_of(sh[0]), 3, 12, 18, 3, 6, 4))
            else:
                T.evaluate(T.call_intrin("int32", TILES, T.address_of(out[i * 4]), T.address_of(x[i * 6]),
                                         T.address_of(w[0]), T.address_of(b[0]), T.address_of(m[0]),
                                         T.address_of(sh[0]), zero_point, 12, 18, rows, row_len, 4))

    tvm.ir.assert_structural_equal(common_tails(func, HELIUM_TAIL_CHOICES), func)


@needs_cross_tools
def test_a_helium_3x3_convolution_calls_its_fused_tiles_once_for_interior_and_border_pixels(tmp_path) -> None:
    """A padded 3x3 convolution of 48 channels (SAME; rows of 144 B, read in place inside the image: not under
    border_window.HELIUM_COPIED_ROW_BYTES): its unpaired pixels, inside the image or with the copied window (each
    tap's 48 channels one call of the ascending copy), run one call of the fused tiles' out-of-line
    copy (the input and its row stride chosen per pixel), bit-exact with TFLite Micro under QEMU mps3-an547, and on
    the host (the helpers' portable C)."""
    pytest.importorskip("tflite")
    pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
    weights = (np.arange(16 * 3 * 3 * 48) * 37 % 255 - 127).astype("int8").reshape(16, 3, 3, 48)
    tensors = [Tensor("x", (1, 7, 7, 48), "int8", Quantization((0.05,), (-3,))),
               Tensor("w", (16, 3, 3, 48), "int8", Quantization(tuple(0.002 + 0.0005 * (o % 3) for o in range(16)),
                                                             (0,) * 16, 0), weights),
               Tensor("b", (16,), "int32", Quantization(tuple(0.0001 for _ in range(16)), (0,) * 16, 0),
                      np.arange(-800, 800, 100, dtype="int32")),
               Tensor("y", (1, 7, 7, 16), "int8", Quantization((0.1,), (-5,)))]
    conv = Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1}))
    bundle, kernels = bit_exact_bundle(tmp_path, "conv3x3", build(Model(tensors, [conv], (0,), (3,))), "cortex-m55",
                                       "mps3-an547")
    assert len(re.findall(r"_conv_tiles_shared_s8(?:_b16)?\(", kernels)) == 1 and "_CHOOSE(" in kernels, kernels
    assert "_conv_tiles_s8" not in kernels and "_copy_ascending(" in kernels, kernels
    assert "_pair_tiles_shared_s8" in kernels, kernels  # (its pairs: backends/cortex_m/schedules/pair_tiles.py)
    host_selftest_passes(bundle.out_dir)


@needs_cross_tools
def test_a_helium_stem_calls_its_mac_once_after_either_window_copy(tmp_path) -> None:
    """A 3x3 stride-2 convolution on 3 channels (SAME padding: the last row and column of pixels overhang): every
    pixel copies its window (inside the image, or with the padding), then the kernel's one MAC call runs on it."""
    pytest.importorskip("tflite")
    pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
    weights = (np.arange(8 * 3 * 3 * 3) * 37 % 255 - 127).astype("int8").reshape(8, 3, 3, 3)
    tensors = [Tensor("x", (1, 12, 12, 3), "int8", Quantization((0.05,), (-3,))),
               Tensor("w", (8, 3, 3, 3), "int8", Quantization((0.02,), (0,)), weights),
               Tensor("b", (8,), "int32", Quantization((0.001,), (0,)), np.arange(-400, 400, 100, dtype="int32")),
               Tensor("y", (1, 6, 6, 8), "int8", Quantization((0.1,), (-128,)))]
    conv = Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {"Padding": 0, "StrideW": 2, "StrideH": 2,
                                                                          "FusedActivationFunction": 1}))
    _bundle, kernels = bit_exact_bundle(tmp_path, "stem", build(Model(tensors, [conv], (0,), (3,))), "cortex-m55",
                                        "mps3-an547")
    # (its channel tiles in one call of the fused tiles' helper, its per-tensor requantization as per-channel
    # constants: once, after both copies)
    assert len(re.findall(r"_(?:conv_tiles_s8(?:_b16)?|dual_mac_s8x4)\(", kernels)) == 1, kernels


def test_through_loops_an_interior_and_a_border_tile_loop_become_one_loop_choosing_the_mac_input() -> None:
    """RV32's use (``through_loops``, backends/riscv/schedules/mac.py RISCV_TAIL_CHOICES): each branch ends with a
    loop over two channel tiles (its sum zeroed, the window MAC's call block, a store), the same but for the call's
    input address (the image in place; the copied window) and its window sizes. Expected: the copy under the negated
    test, then one loop whose call chooses its input and sizes; without ``through_loops`` (or without the choices)
    both loops stay."""

    @T.prim_func(s_tir=True)
    def before(x: T.Buffer((48,), "int8"), w: T.Buffer((144,), "int8"), out: T.Buffer((32,), "int8")):
        window = T.sblock_alloc_buffer((18,), "int8")
        acc = T.sblock_alloc_buffer((8,), "int32")
        for i in range(4):
            if 1 <= i and i < 3:
                for t in range(2):
                    acc[0] = 0
                    with T.sblock("mac"):
                        T.reads(x[0:48], w[0:144])
                        T.writes(acc[0:8])
                        T.evaluate(T.call_intrin("int32", MAC_OP, T.address_of(acc[0]), T.address_of(x[i * 6 - 6]),
                                                 T.address_of(w[t * 72]), 12, 9, 3, 6))
                    out[i * 8 + t] = T.Cast("int8", acc[0])
            else:
                for k in range(18):
                    window[k] = T.int8(-128)
                for t in range(2):
                    acc[0] = 0
                    with T.sblock("mac"):
                        T.reads(window[0:18], w[0:144])
                        T.writes(acc[0:8])
                        T.evaluate(T.call_intrin("int32", MAC_OP, T.address_of(acc[0]), T.address_of(window[0]),
                                                 T.address_of(w[t * 72]), 18, 9, 1, 18))
                    out[i * 8 + t] = T.Cast("int8", acc[0])

    @T.prim_func(s_tir=True)
    def after(x: T.Buffer((48,), "int8"), w: T.Buffer((144,), "int8"), out: T.Buffer((32,), "int8")):
        window = T.sblock_alloc_buffer((18,), "int8")
        acc = T.sblock_alloc_buffer((8,), "int32")
        for i in range(4):
            if not (1 <= i and i < 3):
                for k in range(18):
                    window[k] = T.int8(-128)
            for t in range(2):
                acc[0] = 0
                with T.sblock("mac"):
                    T.reads(x[0:48], w[0:144], window[0:18])
                    T.writes(acc[0:8])
                    T.evaluate(T.call_intrin("int32", MAC_OP, T.address_of(acc[0]),
                                             T.call_intrin("handle", RISCV_CHOOSE_OP, 1 <= i and i < 3,
                                                           T.address_of(x[i * 6 - 6]), T.address_of(window[0])),
                                             T.address_of(w[t * 72]), T.Select(1 <= i and i < 3, 12, 18), 9,
                                             T.Select(1 <= i and i < 3, 3, 1), T.Select(1 <= i and i < 3, 6, 18)))
                out[i * 8 + t] = T.Cast("int8", acc[0])

    merged = common_tails(before, RISCV_TAIL_CHOICES, through_loops=True)
    tvm.ir.assert_structural_equal(merged, after.with_attr("global_symbol", "before"))
    tvm.ir.assert_structural_equal(common_tails(before, RISCV_TAIL_CHOICES), before)
    tvm.ir.assert_structural_equal(common_tails(before, through_loops=True), before)
