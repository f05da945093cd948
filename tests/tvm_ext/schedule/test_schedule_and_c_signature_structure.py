"""Before/Expected structural tests (TVM style) for our schedule and our C kernel signature.

Each test builds a small TE PrimFunc by hand, runs one of our transformations, and compares the result with a
hand-written expected module (`tvm.ir.assert_structural_equal`) or exact expected records and C prototype.
"""

from __future__ import annotations

import dataclasses

import tvm
from tvm import te
from tvm.script import tirx as T

from memory_planner.plan import KernelParameter, KernelSignature, ScratchBuffer
from packager.c_types import c_prototype
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.layers import NUM_OUTPUTS_ATTR
from tvm_ext.schedule.kernel_schedule import inline_intermediates


def scale_dot_relu() -> tvm.tirx.PrimFunc:
    """out[i] = max(sum_k (x[i, k] * 2) * w[k] + 1, 0): a producer, a reduction and an epilogue."""
    x = te.placeholder((4, 8), "float32", name="x")
    w = te.placeholder((8,), "float32", name="w")
    k = te.reduce_axis((0, 8), name="k")
    scaled = te.compute((4, 8), lambda i, j: x[i, j] * 2.0, name="scaled")
    dot = te.compute((4,), lambda i: te.sum(scaled[i, k] * w[k], axis=k), name="dot")
    out = te.compute((4,), lambda i: te.max(dot[i] + 1.0, 0.0), name="out")
    return te.create_prim_func([x, w, out])


def sum_of_squares() -> tvm.tirx.PrimFunc:
    """sq[i] = sum_k (y[i, k] * 3)^2: the reduction reads its producer twice per element."""
    y = te.placeholder((4, 8), "float32", name="y")
    k = te.reduce_axis((0, 8), name="k")
    p = te.compute((4, 8), lambda i, j: y[i, j] * 3.0, name="p")
    sq = te.compute((4,), lambda i: te.sum(p[i, k] * p[i, k], axis=k), name="sq")
    return te.create_prim_func([y, sq])


def test_producer_is_inlined_and_the_epilogue_moves_after_the_reduction_of_its_row() -> None:
    @T.prim_func(s_tir=True)
    def expected(x: T.Buffer((4, 8), "float32"), w: T.Buffer((8,), "float32"), out: T.Buffer((4,), "float32")):
        T.func_attr({"tirx.noalias": True})
        dot = T.sblock_alloc_buffer((4,))
        for i in range(4):
            with T.sblock("dot_init"):
                v_i = T.axis.spatial(4, i)
                T.reads()
                T.writes(dot[v_i])
                dot[v_i] = T.float32(0.0)
            for k in range(8):
                with T.sblock("dot_update"):
                    v_i, v_k = T.axis.remap("SR", [i, k])
                    T.reads(dot[v_i], x[v_i, v_k], w[v_k])
                    T.writes(dot[v_i])
                    dot[v_i] = dot[v_i] + x[v_i, v_k] * T.float32(2.0) * w[v_k]
            with T.sblock("out"):
                v_i = T.axis.spatial(4, i)
                T.reads(dot[v_i])
                T.writes(out[v_i])
                out[v_i] = T.max(dot[v_i] + T.float32(1.0), T.float32(0.0))

    tvm.ir.assert_structural_equal(inline_intermediates(scale_dot_relu()), expected.with_attr("global_symbol", "main"))  # te.create_prim_func names it main


def test_producer_read_twice_is_computed_inside_the_reduction_loop_not_inlined() -> None:
    @T.prim_func(s_tir=True)
    def expected(y: T.Buffer((4, 8), "float32"), sq: T.Buffer((4,), "float32")):
        T.func_attr({"tirx.noalias": True})
        p = T.sblock_alloc_buffer((4, 8))
        for i in range(4):
            with T.sblock("sq_init"):
                v_i = T.axis.spatial(4, i)
                T.reads()
                T.writes(sq[v_i])
                sq[v_i] = T.float32(0.0)
            for k in range(8):
                with T.sblock("p"):
                    v_i, v_j = T.axis.remap("SS", [i, k])
                    T.reads(y[v_i, v_j])
                    T.writes(p[v_i, v_j])
                    p[v_i, v_j] = y[v_i, v_j] * T.float32(3.0)
                with T.sblock("sq_update"):
                    v_i, v_k = T.axis.remap("SR", [i, k])
                    T.reads(sq[v_i], p[v_i, v_k])
                    T.writes(sq[v_i])
                    sq[v_i] = sq[v_i] + p[v_i, v_k] * p[v_i, v_k]

    tvm.ir.assert_structural_equal(inline_intermediates(sum_of_squares()), expected.with_attr("global_symbol", "main"))  # te.create_prim_func names it main


def without_streams(signatures: dict[str, KernelSignature]) -> dict[str, KernelSignature]:
    """The signatures with their stream orders left out (tests/tvm_ext/codegen/test_stream_order.py checks those)."""
    return {name: dataclasses.replace(sig, streams=()) for name, sig in signatures.items()}


def floats(*names: str, read_only: bool) -> tuple[KernelParameter, ...]:
    return tuple(KernelParameter(name, "float32", read_only) for name in names)


def test_c_signature_is_inputs_then_outputs_then_the_large_buffer_as_scratch() -> None:
    """Unscheduled: `scaled` (4x8 float32 = 128 B > LOCAL_BUFFER_MAX_BYTES) becomes scratch0; `dot`
    (16 B) stays a local array."""
    kernel = scale_dot_relu().with_attr(NUM_OUTPUTS_ATTR, 1)
    source = generate_c({"k": kernel}, tvm.target.Target({"kind": "c"}))
    parameters = (*floats("input0", "input1", read_only=True), *floats("output0", "scratch0", read_only=False))
    expected = KernelSignature("k", 2, 1, (ScratchBuffer("float32", 128),), parameters,
                               stack_array_bytes=16)  # `dot`, float32[4], on the stack
    assert without_streams(source.signatures) == {"k": expected}
    # The definition opens with the prototype the packager declares from the signature (no TVM declarations).
    prototype = "void k(const float* input0, const float* input1, float* output0, float* scratch0)"
    assert c_prototype(source.signatures["k"]) == prototype
    assert source.c_text.count(f"{prototype};\n") == 0 and source.c_text.count(f"{prototype} {{\n") == 1
    assert "  float dot_ptr[4];\n" in source.c_text


def test_c_signature_of_a_scheduled_kernel_has_no_scratch() -> None:
    kernel = inline_intermediates(scale_dot_relu()).with_attr(NUM_OUTPUTS_ATTR, 1)
    source = generate_c({"k": kernel}, tvm.target.Target({"kind": "c"}))
    parameters = (*floats("input0", "input1", read_only=True), *floats("output0", read_only=False))
    # its one accumulator (float32[1]) on the stack
    assert without_streams(source.signatures) == {"k": KernelSignature("k", 2, 1, (), parameters,
                                                                       stack_array_bytes=4)}
    assert "void k(const float* input0, const float* input1, float* output0) {\n" in source.c_text


def test_a_local_buffer_stays_a_local_array_whatever_its_size() -> None:
    """Unscheduled, `scaled` (128 B > LOCAL_BUFFER_MAX_BYTES) declared "local" by the kernel's author: a local array
    of the C function (on the stack), no scratch (TVM's C printer alone refuses a "local" allocation)."""
    schedule = tvm.s_tir.Schedule(scale_dot_relu())
    schedule.set_scope(schedule.get_sblock("scaled"), 0, "local")
    kernel = schedule.mod["main"].with_attr(NUM_OUTPUTS_ATTR, 1)
    source = generate_c({"k": kernel}, tvm.target.Target({"kind": "c"}))
    parameters = (*floats("input0", "input1", read_only=True), *floats("output0", read_only=False))
    # `scaled` float32[32] and `dot` float32[4] on the stack: 144 B
    assert without_streams(source.signatures) == {"k": KernelSignature("k", 2, 1, (), parameters,
                                                                       stack_array_bytes=144)}
    assert "  float scaled_local_ptr[32];\n" in source.c_text
