"""The DSP and Helium cores' (and the RISC-V cores', through the helper's portable path: MUL and MULH) scalar
requantizations of an element loop as calls of `<prefix>_requantize_biased`
(`backends.cortex_m.helpers.templates.requantize_biased.h.in`: SMMLAR, the sign term and the shift, inlined with
constant arguments), the zero point added after a requantization folded into its bias.

The int8 elementwise kernels (ADD, SUB, MUL, the lookup tables of LOGISTIC and TANH, QUANTIZE between int8 scales,
and the chains of them FuseOps fuses: an unrolled GRU's gate arithmetic) compute each rescale as
`requantize_double_small(acc, multiplier, shift)` (`packager.fixed_point_c`'s scalar helper, constant shift, the
multiplier constant or, in an LSTM's rolled gates, read at run time), most of them followed by `+ zero_point`:
SMMULR, the lowering of a negative, two shifts and the ceil-halving subtraction, then the addition, five
instructions on cortex-m4f. `biased_requantize_calls` rewrites each such requantization of a kernel without scratch
buffers (an element loop: a MAC or pool kernel's accumulators keep their epilogue, `requantize_epilogue`) as
`requantize_biased(acc, multiplier, right, bias)` with bias 2^(right - 1) + (zero_point << right), three
instructions (SMMLAR with the bias, the sign term, the shift). Bit-exact: the helper's contract proves it for -2^30
<= acc < 2^30 (the scalar helper's own domain), a multiplier 0..2^31 - 1, right 1..30 (at 31 the rounding term 2^30
alone is over the limit) and |bias| <= BIAS_LIMIT (where the zero point would take the bias beyond it, the
requantization takes bias 2^(right - 1) and keeps the addition after the call).
"""

from __future__ import annotations

from typing import Optional

import tvm
from tvm import s_tir, tirx

from backends.cortex_m.helpers.requantize_biased_c import REQUANTIZE_BIASED_HELPERS
from packager.fixed_point_c import REQUANTIZE_OPS, SATURATE_INT8_OP, SMALL_RIGHT_SHIFT
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import map_nodes, map_store_expressions, walk

BIAS_LIMIT = 2**30 - 2
"""The largest |bias| of the helper's contract (no int32 step overflows)."""
SMALL_OP = REQUANTIZE_OPS[SMALL_RIGHT_SHIFT]
"""The scalar requantization this pass rewrites (`requantize_double_small`)."""
REQUANTIZE_BIASED_OP = "tvm_ext.requantize_biased"
# The call (acc, multiplier, right, bias) -> the requantized acc plus the zero point that bias holds (int32).
register_helper_call(REQUANTIZE_BIASED_OP, REQUANTIZE_BIASED_HELPERS, "{}_requantize_biased".format, pure=True)
REQUANTIZE_BIASED_S8_OP = "tvm_ext.requantize_biased_s8"
# The same call saturated to int8 (what `saturate_int8` of the call gives).
register_helper_call(REQUANTIZE_BIASED_S8_OP, REQUANTIZE_BIASED_HELPERS, "{}_requantize_biased_s8".format, pure=True)


def _constant(expr) -> Optional[int]:
    """The value of an integer constant (an int32 or int64 immediate), else None."""
    return int(expr.value) if isinstance(expr, tirx.IntImm) else None


def _multiplier(expr) -> Optional[tirx.Expr]:
    """`expr` as the helper's multiplier argument: a constant 0..2^31 - 1, or one read at run time (an LSTM's gates of
    one form in one loop read theirs from their offsets, `tvm_ext.kernels.lstm.gate_groups`), which the small
    requantization's contract already bounds so (0 <= multiplier: TFLite's quantized multipliers); else None."""
    if not isinstance(expr, tirx.IntImm):
        return expr
    return expr if 0 <= int(expr.value) < 2**31 else None


def _small_requantization(expr) -> Optional[tuple[object, tirx.Expr, int]]:
    """(acc, multiplier, right) of `requantize_double_small(acc, multiplier, -right)` with a multiplier `_multiplier`
    takes and a constant right 1..30, else None."""
    if not isinstance(expr, tvm.ir.Call) or not isinstance(expr.op, tvm.ir.Op) or expr.op.name != SMALL_OP:
        return None
    acc, multiplier, shift = expr.args
    multiplier, shift = _multiplier(multiplier), _constant(shift)
    if multiplier is None or shift is None or not -30 <= shift <= -1:
        return None
    return acc, multiplier, -shift


def _biased_call(requantization: tuple[object, tirx.Expr, int], zero_point: int, rewrite) -> Optional[tirx.Expr]:
    """The helper's call computing the requantization plus `zero_point` (its acc rewritten by `rewrite`), or None
    where that bias exceeds BIAS_LIMIT."""
    acc, multiplier, right = requantization
    bias = (1 << (right - 1)) + (zero_point << right)
    if abs(bias) > BIAS_LIMIT:
        return None
    return tirx.call_intrin("int32", REQUANTIZE_BIASED_OP, map_nodes(acc, rewrite), multiplier,
                            tirx.const(right, "int32"), tirx.const(bias, "int32"))


def _rewrite(node) -> Optional[tirx.Expr]:
    """`node` as the helper's call where it is a requantization, or one plus or minus a constant, saturated to int8
    or not; else None."""
    if isinstance(node, tirx.Cast) and str(node.ty.dtype) == "int32" and isinstance(node.value, tirx.Cast) \
            and str(node.value.ty.dtype) == "int8":
        call = _rewrite(node.value.value)  # an int8 value widened again: the saturated call's int32 as it is
        return call if call is not None and call.op.name == REQUANTIZE_BIASED_S8_OP else None
    if isinstance(node, tirx.Cast) and str(node.ty.dtype) == "int32" and str(node.value.ty.dtype) == "int32":
        return _rewrite(node.value)  # a cast to its own type: an extern stage's TIR is not simplified
    if isinstance(node, tvm.ir.Call) and isinstance(node.op, tvm.ir.Op) and node.op.name == SATURATE_INT8_OP:
        call = _rewrite(node.args[0])
        return None if call is None else tirx.call_intrin("int32", REQUANTIZE_BIASED_S8_OP, *call.args)
    if isinstance(node, (tirx.Add, tirx.Sub)) and str(node.ty.dtype) == "int32":
        pairs = [(node.a, node.b, 1)] if isinstance(node, tirx.Add) else [(node.a, node.b, -1)]
        if isinstance(node, tirx.Add):
            pairs.append((node.b, node.a, 1))
        for requantized, offset, sign in pairs:
            requantization, zero_point = _small_requantization(requantized), _constant(offset)
            call = None if requantization is None or zero_point is None \
                else _biased_call(requantization, sign * zero_point, _rewrite)
            if call is not None:
                return call
        return None
    requantization = _small_requantization(node)
    return None if requantization is None else _biased_call(requantization, 0, _rewrite)


def _has_scratch(func: tirx.PrimFunc) -> bool:
    """Whether `func` allocates a buffer (a MAC or pool kernel's accumulators, a copied window): not an element
    loop."""
    return any((isinstance(node, s_tir.SBlock) and len(node.alloc_buffers)) or isinstance(node, tirx.AllocBuffer)
               for node in walk(func.body))


def biased_requantize_calls(func: tirx.PrimFunc, extern_stage: bool = False, least: int = 1) -> tirx.PrimFunc:
    """`func` with each `requantize_double_small` of a constant shift (its multiplier a constant or read at run time,
    `_multiplier`; and a zero point added or subtracted after it) as a call
    of `<prefix>_requantize_biased` where `func` is an element loop (no scratch buffers) or, with `extern_stage`, one
    TE extern stage (whose buffers are its own loops' locals: a MEAN's window sums, `tvm_ext.kernels.window_sums`),
    of at least `least` such requantizations (a fused chain's, with `least` 2); else `func` itself."""
    if not extern_stage and _has_scratch(func):
        return func
    if least > 1 and sum(1 for node in walk(func.body) if _small_requantization(node) is not None) < least:
        return func
    body = map_store_expressions(func.body, _rewrite)
    return func if body.same_as(func.body) else func.with_body(body)
