"""The int8 requantization epilogue of a MAC kernel as one call of a helper per channel tile: on Helium (MVE)
cores the vector epilogue, on cores with the DSP extension the tile's scalar steps written out.

After a MAC kernel is scheduled (``tvm_ext.schedule.kernel_schedule``), each channel tile's accumulators are
requantized by a loop over the tile's channels whose block stores

    out[.., o] = int8(saturate_int8(MultiplyByQuantizedMultiplier(acc[.., o] + bias[o], multiplier[o],
                                                                int32(shift[o])) + zero_point))

(double rounding: one of ``packager.fixed_point_c``'s "double", "double_right_shift", "double_small"; the sum
in int32, or in int64 cast back to int32, both wrapping; an int32 or int16 bias), or stores ``table[that value +
128]`` (an activation fused as a 256-entry int8 lookup table: LEAKY_RELU). ``requantize_epilogue_calls``
replaces each such loop, whose accesses all step one element along their last axis per channel and whose
rounding the core's helper (an ``EpilogueHelper``) computes, by one call of it:

- HELIUM_EPILOGUE, every double rounding: ``<prefix>_requantize_s8`` (``_s8_b16`` for int16 biases;
  ``backends.cortex_m.helpers.helium_c``'s ``helium_requantize.h.in``), four outputs per MVE vector; with a lookup
  table after it ``<prefix>_requantize_s8_lut`` (``_s8_lut_b16``), the table read by a byte gather, four a vector,
  one out-of-line copy per bundle (yolo_tiny_64_odd_int8 on cortex-m55: its LEAKY_RELU convolutions' epilogues had
  been scalar loops written out in every branch of a kernel, 3,400,979 -> 3,267,939 instructions, code 11,220 ->
  10,044 B, where cortex-m4f's is 10,584 B);
- DSP_EPILOGUE, "double_small" only (the rounding of nearly every int8 layer: its shifts, multipliers and sums
  bounded at compile time): ``<prefix>_requantize_small_s8`` (``_s8_b16``;
  ``backends.cortex_m.helpers.requantize_small_c``), always inlined beside the tile's MAC helper, so the
  accumulators stay in registers, and a tile's four shifts one word load; with a lookup table after it
  ``<prefix>_requantize_small_lut_s8`` (``_lut_s8_b16``), one more load per output (yolo_tiny_80_int8 on
  cortex-m4f: its LEAKY_RELU convolutions' epilogues had been scalar loops of 19-24 instructions per output).

Each is bit-exact with the scalar helpers it replaces (its C unit test). Any other epilogue (per-tensor
constants, single rounding, another clamp) stays as it is;
``per_tensor_requantization`` reads a per-tensor one for ``fc_rows``, which takes a fully connected row's whole
loop of channel tiles on Helium and RV32 cores.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm.ir import TensorLoad
from tvm.sym import Analyzer

from backends.bias_forms import by_bias
from backends.cortex_m.helpers import HELIUM_LEFT_SHIFTS_HELPERS
from backends.cortex_m.helpers.helium_c import left_shifts_helper_name, requantize_s8_helper_name
from backends.cortex_m.helpers.requantize_small_c import requantize_small_helper_name
from backends.cortex_m.schedules.dual_mac import AccessOffsets, accessed_buffer, register_mac_helper
from packager.fixed_point_c import REQUANTIZE_OPS, RIGHT_SHIFT_ONLY, SATURATE_INT8_OP, SMALL_RIGHT_SHIFT
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.index_expr import substitute_index
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import walk, with_root_loops_replaced

REQUANTIZE_S8_OPS = by_bias("tvm_ext.requantize_s8")
"""The Helium helper's op per bias type."""
REQUANTIZE_S8_LUT_OPS = by_bias("tvm_ext.requantize_s8_lut")
"""The Helium helper's op per bias type with a lookup table after the requantization."""
REQUANTIZE_SMALL_OPS = by_bias("tvm_ext.requantize_small_s8")
"""The DSP helper's op per bias type."""
REQUANTIZE_SMALL_LUT_OPS = by_bias("tvm_ext.requantize_small_lut_s8")
"""The DSP helper's op per bias type with a lookup table after the requantization."""
LUT_ENTRIES = 256
"""A lookup table's int8 entries, indexed by the saturated int8 value + LUT_OFFSET."""
LUT_OFFSET = 128
ZERO_POINT_BOUND = 2**28
"""The helpers' zero points lie in [-ZERO_POINT_BOUND, ZERO_POINT_BOUND) (an int8 output's are -128..127): the DSP
epilogue adds 2 * zero_point + 1 to a value within +-2^30 before its halving (requantize_small.h.in)."""
DOUBLE_ROUNDING_OPS = frozenset(REQUANTIZE_OPS[helper] for helper in ("double", RIGHT_SHIFT_ONLY, SMALL_RIGHT_SHIFT))
"""The requantizations the Helium helper computes: TFLite's double rounding and its right-shift-only variants."""
# Either helper's call (out, acc, bias, multiplier, shift, zero_point, count): element c < count of each pointer.
REQUANTIZE_S8_ACCESS = HelperAccess(tuple(PointerAccess(pointer, (Axis(Arg(6), 1),)) for pointer in range(5)))
# With a table (..., count, table): its LUT_ENTRIES elements besides.
REQUANTIZE_LUT_ACCESS = HelperAccess((*REQUANTIZE_S8_ACCESS.pointers, PointerAccess(7, (Axis(LUT_ENTRIES, 1),))))
for _ops, _name, _access in ((REQUANTIZE_S8_OPS, requantize_s8_helper_name, REQUANTIZE_S8_ACCESS),
                             (REQUANTIZE_S8_LUT_OPS, functools.partial(requantize_s8_helper_name, table=True),
                              REQUANTIZE_LUT_ACCESS),
                             (REQUANTIZE_SMALL_OPS, requantize_small_helper_name, REQUANTIZE_S8_ACCESS),
                             (REQUANTIZE_SMALL_LUT_OPS, functools.partial(requantize_small_helper_name, table=True),
                              REQUANTIZE_LUT_ACCESS)):
    for _bias, _op in _ops.items():
        register_mac_helper(_op, functools.partial(_name, bias=_bias), _access)


@dataclass(frozen=True)
class EpilogueHelper:
    """A core's epilogue helper: the requantization ops (``packager.fixed_point_c.REQUANTIZE_OPS``' values) whose
    epilogues it computes, its op per bias type ("int32", "int16"), and with a lookup table after the
    requantization (None: it takes none)."""

    roundings: frozenset[str]
    ops: dict[str, str]
    table_ops: Optional[dict[str, str]] = None


HELIUM_EPILOGUE = EpilogueHelper(DOUBLE_ROUNDING_OPS, REQUANTIZE_S8_OPS, REQUANTIZE_S8_LUT_OPS)
DSP_EPILOGUE = EpilogueHelper(frozenset({REQUANTIZE_OPS[SMALL_RIGHT_SHIFT]}), REQUANTIZE_SMALL_OPS,
                              REQUANTIZE_SMALL_LUT_OPS)
DSP_UNTABLED_EPILOGUE = replace(DSP_EPILOGUE, table_ops=None)
"""The DSP epilogue without its lookup-table forms: what a helper that stores the requantized values themselves
(the partial channel tiles) computes; an epilogue with a table after it keeps its loop."""


@dataclass(frozen=True)
class RequantizeEpilogue:
    """What one output's requantization reads and stores: the store into the int8 output, the accumulator,
    bias (int32 or int16), multiplier (int32) and shift (int8) loads, the zero point added, and the lookup
    table whose entry (at the value + LUT_OFFSET) is stored instead, if any."""

    store: tirx.BufferStore
    acc: TensorLoad
    bias: TensorLoad
    multiplier: TensorLoad
    shift: TensorLoad
    zero_point: int
    table: Optional[tirx.Buffer] = None

    def accesses(self) -> tuple:
        """The store and the loads, in the helper's argument order."""
        return self.store, self.acc, self.bias, self.multiplier, self.shift


def _load(expr, dtypes: tuple[str, ...]) -> Optional[TensorLoad]:
    """The load of ``expr`` (a load, or a load cast to a wider integer type) when its buffer's type is one of
    ``dtypes``, else None."""
    while isinstance(expr, tirx.Cast) and str(expr.ty.dtype) in ("int32", "int64"):
        expr = expr.value
    return expr if isinstance(expr, TensorLoad) and str(expr.source.dtype) in dtypes else None


def _sum_operands(expr) -> Optional[tuple[TensorLoad, TensorLoad]]:
    """(accumulator, bias) of ``acc + bias`` in int32, or of ``int32(int64(acc) + int64(bias))`` (both wrap)."""
    if isinstance(expr, tirx.Cast) and str(expr.ty.dtype) == "int32" and str(expr.value.ty.dtype) == "int64":
        expr = expr.value
    if not isinstance(expr, tirx.Add):
        return None
    acc, bias = _load(expr.a, ("int32",)), _load(expr.b, ("int32", "int16"))
    return (acc, bias) if acc is not None and bias is not None else None


def _looked_up(value) -> tuple[Optional[tirx.Buffer], object]:
    """(the table, the value looked up) of ``table[int32(value) + LUT_OFFSET]`` (or int64) over an int8 table of
    LUT_ENTRIES elements, else (None, ``value``)."""
    if not isinstance(value, TensorLoad) or len(value.indices) != 1:
        return None, value
    table, index = value.source, value.indices[0]
    if str(table.dtype) != "int8" or len(table.shape) != 1 or not isinstance(table.shape[0], tirx.IntImm) \
            or int(table.shape[0]) != LUT_ENTRIES:
        return None, value
    if not isinstance(index, tirx.Add) or not isinstance(index.b, tirx.IntImm) or int(index.b.value) != LUT_OFFSET \
            or not isinstance(index.a, tirx.Cast) or str(index.a.ty.dtype) not in ("int32", "int64") \
            or not isinstance(index.a.value, tirx.Cast) or str(index.a.value.ty.dtype) != "int8":
        return None, value
    return table, index.a.value


@dataclass(frozen=True)
class Requantized:
    """One int8 output's requantization as a store computes it: the op of its rounding, the int32 value
    requantized (``acc + bias``), the multiplier and shift operands (loads or constants), the zero point added, and
    the lookup table whose entry is stored instead, if any."""

    op: str
    value: object
    multiplier: object
    shift: object
    zero_point: int
    table: Optional[tirx.Buffer] = None


def requantized(store, roundings: frozenset[str] = DOUBLE_ROUNDING_OPS, tables: bool = False) -> Optional[Requantized]:
    """What ``store`` (an int8 store of ``int8(saturate_int8(rounding(value, multiplier, shift) + zero_point))``,
    with ``tables`` perhaps looked up in a table) requantizes with one of the ops ``roundings`` and a zero point
    within +-ZERO_POINT_BOUND, else None."""
    if not isinstance(store, tirx.BufferStore) or str(store.buffer.dtype) != "int8":
        return None
    table, value = _looked_up(store.value) if tables else (None, store.value)
    if not isinstance(value, tirx.Cast) or not isinstance(value.value, tvm.ir.Call):
        return None
    saturate = value.value
    if not isinstance(saturate.op, tvm.ir.Op) or saturate.op.name != SATURATE_INT8_OP:
        return None
    shifted, zero_point = saturate.args[0], 0
    if isinstance(shifted, (tirx.Add, tirx.Sub)) and isinstance(shifted.b, tirx.IntImm):
        zero_point = int(shifted.b.value) * (1 if isinstance(shifted, tirx.Add) else -1)
        shifted = shifted.a
    if not isinstance(shifted, tvm.ir.Call) or not isinstance(shifted.op, tvm.ir.Op) \
            or shifted.op.name not in roundings or not -ZERO_POINT_BOUND <= zero_point < ZERO_POINT_BOUND:
        return None
    return Requantized(shifted.op.name, *shifted.args, zero_point, table)


def requantize_epilogue(store, roundings: frozenset[str] = DOUBLE_ROUNDING_OPS,
                        tables: bool = False) -> Optional[RequantizeEpilogue]:
    """The requantization ``store`` computes (module docstring) with one of the ops ``roundings``, with
    ``tables`` one looked up in a table too, or None for any other statement."""
    parts = requantized(store, roundings, tables)
    if parts is None:
        return None
    operands = _sum_operands(parts.value)
    multiplier_load = parts.multiplier if isinstance(parts.multiplier, TensorLoad) \
        and str(parts.multiplier.source.dtype) == "int32" else None
    shift_load = _load(parts.shift, ("int8",))
    if operands is None or multiplier_load is None or shift_load is None:
        return None
    return RequantizeEpilogue(store, *operands, multiplier_load, shift_load, parts.zero_point, parts.table)


@dataclass(frozen=True)
class PerTensorRequantization:
    """One output's requantization by per-tensor constants: the store into the int8 output, the accumulator and
    bias (int32 or int16) loads, the rounding's op, and the multiplier, shift and zero point (constants)."""

    store: tirx.BufferStore
    acc: TensorLoad
    bias: TensorLoad
    op: str
    multiplier: int
    shift: int
    zero_point: int


STORED_ARG = 6
"""The argument of an epilogue call (`requantize_epilogue_call`'s) that gives the channels it stores."""


def stored_channels(call: tvm.ir.Call) -> Optional[int]:
    """The channels the epilogue call ``call`` stores where that is one constant, None where it varies by tile (a
    padded last tile's count: ``partial_tables``' min, ``partial_stores``' choice of two constants)."""
    count = call.args[STORED_ARG]
    return int(count) if isinstance(count, tirx.IntImm) else None


def _constant(expr) -> Optional[int]:
    """The value of an integer constant ``expr`` (perhaps cast), else None."""
    while isinstance(expr, tirx.Cast):
        expr = expr.value
    return int(expr.value) if isinstance(expr, tirx.IntImm) else None


def per_tensor_requantization(store, roundings: frozenset[str]) -> Optional[PerTensorRequantization]:
    """The requantization ``store`` computes (module docstring) with one of the ops ``roundings`` when its
    multiplier (int32) and shift (-31..31) are constants: a per-tensor layer's; None for any other statement."""
    parts = requantized(store, roundings)
    operands = _sum_operands(parts.value) if parts is not None else None
    if operands is None:
        return None
    multiplier, shift = _constant(parts.multiplier), _constant(parts.shift)
    if multiplier is None or shift is None or not -2**31 <= multiplier < 2**31 or not -31 <= shift <= 31:
        return None
    return PerTensorRequantization(store, *operands, parts.op, multiplier, shift, parts.zero_point)


def _channels_below(loop: tirx.For, predicate) -> Optional[tirx.Expr]:
    """The count of ``loop``'s channels (from 0) that ``predicate``, ``first + channel < bound`` (``first`` free of
    the channel: a padded last tile's test, ``tile * 4 + channel < channels``), lets through: ``min(extent, bound -
    first)``; None for another predicate."""
    if not isinstance(predicate, tirx.LT) or not isinstance(predicate.b, tirx.IntImm):
        return None
    try:
        first = substitute_index(predicate.a, {loop.loop_var: tirx.const(0, str(loop.loop_var.ty.dtype))})
    except KeyError:
        return None
    analyzer = Analyzer()
    if not analyzer.can_prove_equal(predicate.a - loop.loop_var, first):
        return None
    return analyzer.simplify(tirx.Min(loop.extent, predicate.b - first))


def _as_choice(below: tirx.Expr, count: int) -> tirx.Expr:
    """``below`` (``min(count, bound - first)``, `_channels_below`'s, ``first`` a multiple of ``count``: a padded
    last tile's) as ``Select(first + count <= bound, count, bound % count)``: a choice of two constants, whose
    accesses `tvm_ext.codegen.stream_order` bounds (through a ``Min`` of the tile variable it gave no order, and the
    memory plan let no buffer overlap the layer's: rv32imc resnet8_w15_40x24_int8's arena 29,904 -> 43,335 B);
    ``below`` itself where it is not of that form. The choice is an int32, as a constant count is."""
    if not (isinstance(below, tirx.Min) and isinstance(below.a, tirx.IntImm) and int(below.a) == count
            and isinstance(below.b, tirx.Sub) and isinstance(below.b.a, tirx.IntImm)):
        return below
    bound, first, dtype = int(below.b.a), below.b.b, str(below.ty.dtype)
    if bound % count == 0 or not Analyzer().can_prove_equal(tirx.FloorMod(first, tirx.const(count, dtype)),
                                                            tirx.const(0, dtype)):
        return below
    return tirx.Select(tirx.LE(first + tirx.const(count, dtype), tirx.const(bound, dtype)),
                       tirx.const(count, "int32"), tirx.const(bound % count, "int32"))


def requantize_epilogue_call(loop: tirx.For, helper: EpilogueHelper = HELIUM_EPILOGUE, partial_tables: bool = False,
                             partial_stores: bool = False) -> Optional[s_tir.SBlockRealize]:
    """``helper``'s call block computing what ``loop`` (from 0, a constant count of channels, around the block
    of one requantization) computes, or None where its block is not one of ``helper``'s roundings or an access
    does not step one element along its last axis per channel (every other axis fixed). With ``partial_tables``
    a loop whose block looks its values up in a table and runs under a padded last tile's channel test
    (``_channels_below``) takes the call too, its count the channels below the bound (the helper's scalar rest
    past its tiles of four); one that stores its values keeps its loop for the fused partial tiles
    (``conv_tiles.partial_tile_epilogue``), or with ``partial_stores`` (a core without them: RV32, whose kernels of
    padded channels keep their own tile loops) takes the call too."""
    realize = loop.body
    if not isinstance(realize, s_tir.SBlockRealize) or not isinstance(loop.extent, tirx.IntImm) \
            or not isinstance(loop.min, tirx.IntImm) or int(loop.min) != 0:
        return None
    whole = isinstance(realize.predicate, tirx.IntImm) and bool(realize.predicate)
    below = None if whole or not (partial_tables or partial_stores) else _channels_below(loop, realize.predicate)
    if not whole and below is None:
        return None
    epilogue = requantize_epilogue(realize.block.body, helper.roundings, helper.table_ops is not None)
    count = int(loop.extent)
    if epilogue is None or count < 1 or (below is not None and not (partial_tables if epilogue.table is not None
                                                                     else partial_stores)):
        return None
    bindings = {iv.var: value for iv, value in zip(realize.block.iter_vars, realize.iter_values)}
    offsets = AccessOffsets(bindings, [loop.loop_var])
    try:
        for access in epilogue.accesses():
            first = offsets.index(access, [0])
            if any(offsets.index(access, [c]) != [*first[:-1], first[-1] + c] for c in range(1, count)):
                return None
        origin = {loop.loop_var: tirx.const(0, str(loop.loop_var.ty.dtype))}
        block_values = {var: substitute_index(value, origin) for var, value in bindings.items()}
        starts = [tirx.BufferLoad(accessed_buffer(access), [substitute_index(i, block_values) for i in access.indices])
                  for access in epilogue.accesses()]
    except KeyError:
        return None  # an index form we do not evaluate: keep the loop
    bias = str(epilogue.bias.source.dtype)
    op = helper.ops[bias] if epilogue.table is None else helper.table_ops[bias]
    table = [] if epilogue.table is None else [tirx.address_of(tirx.BufferLoad(epilogue.table, [tirx.const(0, "int32")]))]
    stored = count if below is None else _as_choice(below, count) if partial_stores else below
    call = tirx.call_intrin("int32", op, *(tirx.address_of(start) for start in starts), epilogue.zero_point, stored,
                            *table)
    out, *reads = [tirx.BufferRegion(start.source, [tvm.ir.Range.from_min_extent(i, 1) for i in start.indices[:-1]]
                                     + [tvm.ir.Range.from_min_extent(start.indices[-1], stored)]) for start in starts]
    if epilogue.table is not None:
        reads.append(tirx.BufferRegion(epilogue.table, [tvm.ir.Range.from_min_extent(0, LUT_ENTRIES)]))
    block = s_tir.SBlock([], reads, [out], "requantize", tirx.Evaluate(call))
    return s_tir.SBlockRealize([], True, block)


def requantize_epilogue_calls(func: tirx.PrimFunc, helper: EpilogueHelper = HELIUM_EPILOGUE,
                              partial_tables: bool = False, partial_stores: bool = False) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel: a root block around its loops) with each requantization loop of the
    module docstring's form that ``helper`` computes (not inside another block) replaced by its call, with
    ``partial_tables`` a padded last tile's looked up too, with ``partial_stores`` one's stored too
    (``requantize_epilogue_call``); any other function unchanged."""
    return with_root_loops_replaced(func, functools.partial(requantize_epilogue_call, helper=helper,
                                                            partial_tables=partial_tables,
                                                            partial_stores=partial_stores))


LEFT_SHIFTS_OP = "tvm_ext.helium_left_shifts"
"""The no-op whose call makes a Helium bundle define <PREFIX>_LEFT_SHIFTS (``helium_left_shifts.h.in``)."""
register_helper_call(LEFT_SHIFTS_OP, HELIUM_LEFT_SHIFTS_HELPERS, left_shifts_helper_name)


def may_shift_left(func: tirx.PrimFunc) -> bool:
    """Whether a requantization of ``func`` (before its epilogue calls) may shift left: it calls TFLite's double
    rounding (``REQUANTIZE_OPS["double"]``), whose shifts may be positive; its right-shift-only variants (the
    lowering's choice where every shift is negative: ``tvm_ext.kernels.fixed_point.shifts_right_only``) never do."""
    double = REQUANTIZE_OPS["double"]
    return any(isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == double
               for node in walk(func.body))


def with_left_shifts_recorded(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a root block around its statements) calling first the no-op of LEFT_SHIFTS_OP, so that its bundle
    defines <PREFIX>_LEFT_SHIFTS (the Helium requantization's VSHL by positive shifts); ``func`` itself when its
    body is no root block."""
    realize = func.body
    if not isinstance(realize, s_tir.SBlockRealize):
        return func
    root = realize.block
    body = tirx.SeqStmt([tirx.Evaluate(tirx.call_intrin("int32", LEFT_SHIFTS_OP)), root.body])
    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, body, root.init,
                         root.alloc_buffers, root.match_buffers, root.annotations)
    return func.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))
