"""A statement both branches of a test end with runs once after the test (backends/cortex_m/schedules/common_tails.py):
the rewrite on small TIR kernels (a copied window's call, nested tests, branches that differ at the end), and the
Helium schedules' use of it on a stem convolution whose windows are all copied (one fused call per pixel, not
two inlined copies), bit-exact with TFLite Micro under QEMU mps3-an547."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from backends.cortex_m.schedules.common_tails import common_tails
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools
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
    # (its per-tensor requantization keeps the dual MAC's loop over the channel tiles: once, after both copies)
    assert len(re.findall(r"_(?:conv_tiles_s8|dual_mac_s8x4)\(", kernels)) == 1, kernels
