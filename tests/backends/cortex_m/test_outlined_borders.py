"""On Helium, a LEAKY_RELU convolution's border pixels call the table-form tiles' out-of-line copy where it pays
(`backends.cortex_m.schedules.outlined_borders`): the border branch's call only, the interior's kept inlined."""

from __future__ import annotations

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.schedules.conv_tiles import CONV_TILES_LUT_OPS, SHARED_CONV_TILES_LUT_OPS
from backends.cortex_m.schedules.outlined_borders import (COPY_BYTES, INLINED_BYTES, PIXEL_INSTRUCTIONS,
                                                          outlined_border_calls, outlined_borders)
from backends.code_price import INSTRUCTIONS_PER_BYTE
from tvm_ext.tir.tir_walk import walk


def _tiles_call(op: str, rows: int) -> s_tir.SBlockRealize:
    """A block of one call of ``op`` (its arguments but for the window's rows arbitrary)."""
    args = [tirx.const(value, "int32") for value in (0, 0, 0, 0, 0, 0, -2, 204, 153, rows, 51, 30, 0)]
    call = tirx.call_intrin("int32", op, *args)
    return s_tir.SBlockRealize([], True, s_tir.SBlock([], [], [], "conv_tiles", tirx.Evaluate(call)))


def _padded_kernel(height: int, width: int) -> tirx.PrimFunc:
    """A kernel's pixel loops, the fused table-form call alone on the pixels inside (1 <= y < height - 1,
    1 <= x < width - 1), after a store (the copied window) on the border ones."""
    y, x = tirx.Var("y", "int32"), tirx.Var("x", "int32")
    scratch = tirx.decl_buffer((153,), "int8", "scratch")
    inside = tirx.all(tirx.LE(tirx.const(1, "int32"), y), tirx.LT(y, tirx.const(height - 1, "int32")),
                      tirx.LE(tirx.const(1, "int32"), x), tirx.LT(x, tirx.const(width - 1, "int32")))
    copy = tirx.BufferStore(scratch, tirx.const(-105, "int8"), [tirx.const(0, "int32")])
    op = CONV_TILES_LUT_OPS["int32"]
    test = tirx.IfThenElse(inside, _tiles_call(op, 3), tirx.SeqStmt([copy, _tiles_call(op, 1)]))
    body = tirx.For(y, 0, height, tirx.ForKind.SERIAL, tirx.For(x, 0, width, tirx.ForKind.SERIAL, test))
    root = s_tir.SBlockRealize([], True, s_tir.SBlock([], [], [], "root", body, None, [scratch]))
    return tirx.PrimFunc([], root)


def _ops(func: tirx.PrimFunc) -> list[str]:
    return [node.op.name for node in walk(func.body) if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op)
            and "conv_tiles" in node.op.name]


def test_the_border_call_becomes_the_copy_and_the_interior_stays_inlined() -> None:
    outlined = outlined_border_calls(_padded_kernel(20, 12))
    assert _ops(outlined) == [CONV_TILES_LUT_OPS["int32"], SHARED_CONV_TILES_LUT_OPS["int32"]]


def test_kernels_of_few_border_pixels_pay_the_copy_together() -> None:
    # 20x12 pixels: 60 on the border; 5x3: 12
    kernels = {"a": _padded_kernel(20, 12), "b": _padded_kernel(5, 3), "c": _padded_kernel(6, 4)}
    assert outlined_borders(kernels, {}) == {"int32": frozenset({"a", "b", "c"})}
    assert outlined_borders({"a": kernels["a"]}, {}) == {}  # one kernel: less than the copy's bytes
    # a kernel whose border pixels cost more than its bytes save stays inlined; the others still pay the copy
    wide = _padded_kernel(60, 40)  # 196 border pixels
    assert (196 * PIXEL_INSTRUCTIONS > INLINED_BYTES * INSTRUCTIONS_PER_BYTE
            and 3 * INLINED_BYTES > COPY_BYTES + (60 + 12 + 16) * PIXEL_INSTRUCTIONS / INSTRUCTIONS_PER_BYTE)
    assert outlined_borders({**kernels, "wide": wide}, {}) == {"int32": frozenset({"a", "b", "c"})}
    assert outlined_borders(kernels, {"a": 4}) == {"int32": frozenset({"b", "c"})}
