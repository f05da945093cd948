"""The stacked-rows MAC of DSP cores, reached from a scheduled int8 FULLY_CONNECTED kernel whose weights the
lowering stacked (`tvm_ext.kernels.dense.stack_rows`, where the backend asks: `KernelSchedules.stacked_rows`).

Two output channels' weights at one input are one int16 half, w_r + 256 w_s, so one SMLAD of an input pair by a
word of two halves accumulates both channels' products and, after one SXTB16 of that word, a second SMLAD the even
channel's alone: per four MACs two SMLAD and one SXTB16, against the dual MAC's two and two
(`backends/cortex_m/helpers/templates/stacked_mac.h.in`, whose contract says why the sums are exact). The
reduction of such a kernel tiled to DUAL_MAC_CHANNELS (4) output channels (one input row: the loop of its K
inputs, then the four channels) becomes one call of `<prefix>_stacked_mac_s8x4(acc, x, w, K)` per tile, where the
update is `acc[.., o] += int32(x[.., k]) * stacked_weight(o, k)` (`tvm_ext.kernels.dense.stacked_weight`'s
decoding) over int8 x read contiguously, the tile's first channel a multiple of four and its bytes one aligned run
of the stacked layout. Integer sums in another order: bit-exact.

Where the lowering widened the weights to int16 instead (`tvm_ext.kernels.dense.widen_rows`, the flash holding them:
`KernelSchedules.widened_rows_pay`), the update is ``acc[.., o] += int32(x[.., k]) * int32(w)`` over the int16 halves
the widened-rows MAC reads (`backends/cortex_m/helpers/templates/wide_mac.h.in`: 15 instructions per 16 MACs), and
such a tile becomes one call of ``<prefix>_wide_mac_s8x4(acc, x, w, K)``, K a multiple of WIDE_MAC_INPUTS.
"""

from __future__ import annotations

from typing import Callable, Optional

import tvm_ffi
from tvm import s_tir, tirx
from tvm.ir import TensorLoad

from backends.cortex_m.helpers.dual_mac_c import (DUAL_MAC_CHANNELS, WIDE_MAC_INPUTS, stacked_mac_helper_name,
                                                 wide_mac_helper_name)
from backends.cortex_m.schedules.dual_mac import (AccessOffsets, MacReduction, _load_of, channel_tile,
                                                helper_call_block, int8_data_update, register_mac_helper)
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess

STACKED_MAC_OP = "tvm_ext.stacked_mac_s8x4"
STACKED_MAC_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(DUAL_MAC_CHANNELS, 1),)),
    PointerAccess(1, (Axis(Arg(3), 1),)),
    PointerAccess(2, (Axis(Arg(3), 4), Axis(4, 1))),
))
"""The call (acc, x, w, len): acc[c] for c < 4, x[k] for k < len, w[j] for j < 4 len."""
register_mac_helper(STACKED_MAC_OP, stacked_mac_helper_name, STACKED_MAC_ACCESS)
WIDE_MAC_OP = "tvm_ext.wide_mac_s8x4"
"""The widened-rows MAC's call (acc, x, w, len), w int16: the same elements as STACKED_MAC_ACCESS."""
register_mac_helper(WIDE_MAC_OP, wide_mac_helper_name, STACKED_MAC_ACCESS)


def _is_int(expr, value: int) -> bool:
    return isinstance(expr, tirx.IntImm) and int(expr) == value


def _stacked_loads(select) -> Optional[tuple[tirx.PrimExpr, TensorLoad, TensorLoad]]:
    """(the channel expression o, the lo load, the hi load) of `tvm_ext.kernels.dense.stacked_weight`'s
    ``Select(o % 2 == 0, int32(lo), int32(hi) + Select(lo < 0, 1, 0))`` (lo cast to any integer type in the test: TVM
    widens it to int64 there), or None where ``select`` is not that."""
    if not isinstance(select, tirx.Select):
        return None
    condition, low = select.condition, _load_of(select.true_value, ("int8",))
    if not (isinstance(condition, tirx.EQ) and isinstance(condition.a, tirx.FloorMod) and _is_int(condition.a.b, 2)
            and _is_int(condition.b, 0) and low is not None):
        return None
    high_sum = select.false_value
    if not isinstance(high_sum, tirx.Add) or not isinstance(high_sum.b, tirx.Select):
        return None
    high, borrow = _load_of(high_sum.a, ("int8",)), high_sum.b
    if not (high is not None and high.source.same_as(low.source) and isinstance(borrow.condition, tirx.LT)
            and isinstance(borrow.condition.a, tirx.Cast) and tvm_ffi.structural_equal(borrow.condition.a.value, low)
            and _is_int(borrow.condition.b, 0)
            and _is_int(borrow.true_value, 1) and _is_int(borrow.false_value, 0)):
        return None
    return condition.a.a, low, high


def stacked_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The stacked-rows MAC's call block for ``loops`` (the loop of the K inputs, then the unit-stride loop of
    DUAL_MAC_CHANNELS output channels) around ``realize``, or None where the update or its accesses do not fit
    (see the module docstring)."""
    update = int8_data_update(realize, loops, DUAL_MAC_CHANNELS)
    stacked = _stacked_loads(update[2]) if update is not None and len(loops) == 2 else None
    if stacked is None:
        return None
    channel, low, high = stacked

    def fits(offsets: AccessOffsets, base_w: int, point: list) -> bool:
        k, c = point
        first = offsets.value(channel, offsets.origin)  # a whole tile of the layout (its STACKED_TILE)
        byte = base_w + 16 * (k // 4) + 4 * (2 * (c // 2) + k % 2) + 2 * (k % 4 // 2)
        return (first % DUAL_MAC_CHANNELS == 0 and offsets.value(channel, point) == first + c
                and offsets.offset(low, point) == byte and offsets.offset(high, point) == byte + 1)

    return _row_call(STACKED_MAC_OP, realize, loops, update, low, 4, fits)


def wide_mac_replacement(realize: s_tir.SBlockRealize, loops: list) -> Optional[s_tir.SBlockRealize]:
    """The widened-rows MAC's call block for ``loops`` (the loop of the K inputs, K a multiple of WIDE_MAC_INPUTS, then
    the unit-stride loop of DUAL_MAC_CHANNELS output channels) around ``realize``, or None where the update
    ``acc += int32(x) * int32(w)`` over int16 w or its accesses do not fit `tvm_ext.kernels.dense.widen_rows`' layout
    from a tile's first half (the module docstring)."""
    update = int8_data_update(realize, loops, DUAL_MAC_CHANNELS)
    half = _load_of(update[2], ("int16",)) if update is not None and len(loops) == 2 else None
    if half is None:
        return None

    def fits(offsets: AccessOffsets, base_w: int, point: list) -> bool:
        k, c = point
        return offsets.offset(half, point) == base_w + 16 * (k // 4) + 2 * (2 * c + k % 2) + k % 4 // 2

    return _row_call(WIDE_MAC_OP, realize, loops, update, half, WIDE_MAC_INPUTS, fits)


def _row_call(op: str, realize: s_tir.SBlockRealize, loops: list, update: tuple, weight: TensorLoad, group: int,
              fits: Callable[[AccessOffsets, int, list], bool]) -> Optional[s_tir.SBlockRealize]:
    """The call block of the one-row MAC ``op`` (acc, x, w, len) for ``loops`` around ``realize`` whose ``update``
    (`int8_data_update`'s) reads the re-laid-out ``weight``: len a multiple of ``group``, the tile's first weight
    element a multiple of 4 (a word of int8, two of int16: LDM's alignment), and at the points (input k, channel c)
    about the row's ends the input x[k], the accumulator acc[c] and the weights where ``fits`` (given the offsets,
    the first weight element and the point); else None."""
    store, data = update[:2]
    length = int(loops[0].extent)
    if length % group:
        return None
    bindings = {iv.var: v for iv, v in zip(realize.block.iter_vars, realize.iter_values)}
    inner = [loop.loop_var for loop in loops]
    offsets = AccessOffsets(bindings, inner)
    try:
        base_w, base_x, base_acc = (offsets.offset(a, offsets.origin) for a in (weight, data, store))
        if base_w % 4:
            return None
        for k in sorted({*range(min(length, 2 * group)), *range(length - group, length)}):
            for c in range(DUAL_MAC_CHANNELS):
                point = [k, c]
                if (not fits(offsets, base_w, point) or offsets.offset(data, point) != base_x + k
                        or offsets.offset(store, point) != base_acc + c):
                    return None
    except KeyError:
        return None  # an index form we do not evaluate: keep the scalar loop
    reduction = MacReduction(store, data, weight)
    return helper_call_block(op, reduction, bindings, inner, [length], channel_tile(reduction, DUAL_MAC_CHANNELS))
