"""TE definition of TFLite's int8 SOFTMAX (reference_ops::Softmax, the kernel TFLite Micro runs).

All integer: the input difference to the row maximum is rescaled into Q5.26, exponentiated with
gemmlowp's fixed-point exp_on_negative_values, summed in Q12.19, inverted with gemmlowp's Newton-Raphson
one_over_one_plus_x_for_x_in_0_1, and scaled to the fixed output quantization (scale 1/256, zero point
-128). Intermediate values are bound with TIR ``Bind`` statements so that the generated C evaluates each once.
"""

from __future__ import annotations

from typing import Callable

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import (
    INT32_MAX,
    Rounding,
    count_leading_zeros,
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_left_shift,
    saturating_rounding_doubling_high_mul as mul,
)
from .quant_params import SOFTMAX_SCALED_DIFF_INTEGER_BITS, SoftmaxParams

ACCUMULATION_INTEGER_BITS = 12
# Q0.31 constants of gemmlowp's exp: exp(-1/8), 1/3, and exp(-2^k) for k = -2..4.
EXP_MINUS_ONE_EIGHTH = 1895147668
ONE_THIRD = 715827883
EXP_BARREL_SHIFTER = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                      (2, 39332535), (3, 720401), (4, 242))
# Q2.29 constants of the Newton-Raphson reciprocal: 48/17 and -32/17.
FORTY_EIGHT_SEVENTEENTHS = 1515870810
MINUS_THIRTY_TWO_SEVENTEENTHS = -1010580540


class Lets:
    """Names intermediate values: each is stored once into a small local array and read back.

    TIR ``Let``/``Bind`` would be the natural form, but TVM 0.27's buffer-region analysis substitutes
    let-bound values into one another, and the fixed-point polynomials then grow without end. A value
    read back from memory stays opaque to it, and the C is the same sequence of assignments.
    """

    def __init__(self) -> None:
        self._values: list[PrimExpr] = []
        # Global scope: TVM's C code generator prints no "local" buffers; tvm_ext.codegen_c makes this one
        # an arena scratch argument.
        self.scratch = tirx.decl_buffer((len(EXP_BARREL_SHIFTER) + 32,), "int32", name="fixed_point_temps")

    def bind(self, name: str, value: PrimExpr) -> PrimExpr:
        del name  # the position in the scratch array identifies the value
        slot = len(self._values)
        if slot >= int(self.scratch.shape[0]):
            raise ValueError("too many fixed-point temporaries for the scratch array")
        self._values.append(value)
        return self.scratch[slot]

    def then_store(self, store: tirx.Stmt) -> tirx.Stmt:
        if not self._values:  # nothing named: no scratch array
            return store
        stores = [tirx.BufferStore(self.scratch, value, [slot]) for slot, value in enumerate(self._values)]
        return tirx.SeqStmt([tirx.AllocBuffer(self.scratch), *stores, store])


def rowwise(name: str, shape: list[int], inputs: list[te.Tensor], value: Callable) -> te.Tensor:
    """An int32 tensor of ``shape`` whose element is ``value(lets, input_buffers, index)``.

    Written as a TE extern stage: plain serial loops whose body computes each intermediate once.
    """

    def build(ins, outs):
        index = [tirx.Var(f"i{axis}", "int32") for axis in range(len(shape))]
        lets = Lets()
        result = value(lets, ins, index)
        body = lets.then_store(tirx.BufferStore(outs[0], result, index))
        for axis in reversed(range(len(shape))):
            body = tirx.For(index[axis], 0, shape[axis], tirx.ForKind.SERIAL, body)
        return body

    return te.extern(tuple(shape), inputs, build, name=name, dtype="int32")


def _exp_on_interval_between_negative_one_quarter_and_zero(lets: Lets, a: PrimExpr) -> PrimExpr:
    """exp(a) for a in [-1/4, 0), both Q0.31: Taylor expansion around -1/8."""
    x = lets.bind("x", a + (1 << 28))
    x2 = lets.bind("x2", mul(x, x))
    x3 = lets.bind("x3", mul(x2, x))
    x4_over_4 = lets.bind("x4_over_4", rounding_divide_by_pot(mul(x2, x2), 2))
    poly = lets.bind("poly", rounding_divide_by_pot(mul(x4_over_4 + x3, ONE_THIRD) + x2, 1))
    return EXP_MINUS_ONE_EIGHTH + mul(EXP_MINUS_ONE_EIGHTH, x + poly)


def exp_on_negative_values(lets: Lets, a: PrimExpr, integer_bits: int = SOFTMAX_SCALED_DIFF_INTEGER_BITS) -> PrimExpr:
    """gemmlowp exp of a value a <= 0 with ``integer_bits`` integer bits (Q5.26 in softmax), as Q0.31."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod = lets.bind("a_mod_quarter_minus_quarter", (a & (one_quarter - 1)) - one_quarter)
    result = lets.bind(
        "exp_base",
        _exp_on_interval_between_negative_one_quarter_and_zero(lets, saturating_left_shift(a_mod, integer_bits)),
    )
    remainder = lets.bind("remainder", a_mod - a)
    for exponent, multiplier in EXP_BARREL_SHIFTER:
        if exponent >= integer_bits:  # a remainder bit the input cannot have
            continue
        bit = 1 << (fractional_bits + exponent)
        result = lets.bind("exp_acc", tirx.Select((remainder & bit) != 0, mul(result, multiplier), result))
    return tirx.Select(a == 0, tirx.const(INT32_MAX, "int32"), result)


def _half_denominator_reciprocal(lets: Lets, a: PrimExpr) -> PrimExpr:
    """2/(1+a) as Q2.29 for a Q0.31 a in [0, 1]: three Newton-Raphson steps from 48/17 - 32/17 * d, d = (1+a)/2."""
    total = tirx.Cast("int64", a) + INT32_MAX
    half_denominator = lets.bind(
        "half_denominator", tirx.Cast("int32", tirx.truncdiv(total + tirx.Select(total >= 0, 1, -1).astype("int64"), 2))
    )
    x = lets.bind("nr", FORTY_EIGHT_SEVENTEENTHS + mul(half_denominator, MINUS_THIRTY_TWO_SEVENTEENTHS))
    for _ in range(3):
        one_minus = lets.bind("one_minus", (1 << 29) - mul(half_denominator, x))
        x = lets.bind("nr", x + saturating_left_shift(mul(x, one_minus), 2))
    return x


def one_over_one_plus_x(lets: Lets, a: PrimExpr) -> PrimExpr:
    """gemmlowp 1/(1+a) for a Q0.31 a in [0, 1), as Q0.31."""
    return saturating_left_shift(_half_denominator_reciprocal(lets, a), 1)


def one_minus_x_over_one_plus_x(lets: Lets, a: PrimExpr) -> PrimExpr:
    """gemmlowp (1-a)/(1+a) for a Q0.31 a in [0, 1], as Q0.31: 2/(1+a) - 1 rescaled from Q2.29."""
    return saturating_left_shift(_half_denominator_reciprocal(lets, a) - (1 << 29), 2)


def softmax_int8(data: te.Tensor, *, params: SoftmaxParams, rounding: Rounding, out_dtype: str = "int8") -> te.Tensor:
    """Softmax over the last axis of an int8 tensor; output int8 with scale 1/256 and zero point -128, or int16
    with scale 1/65536 and zero point -32768 (TFLM's int8-in, int16-out softmax: the same arithmetic, the
    output exponent and offset of the wider type)."""
    bits = 8 if out_dtype == "int8" else 16
    out_min, out_max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    shape = [int(d) for d in data.shape]
    depth = shape[-1]
    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute(shape[:-1], lambda *r: te.max(data(*r, k), axis=k), name="row_max")

    def diff(index) -> PrimExpr:
        return data(*index).astype("int32") - row_max(*index[:-1]).astype("int32")

    def exp_term(lets: Lets, ins, index) -> PrimExpr:
        d = lets.bind("diff", ins[0][index].astype("int32") - ins[1][index[:-1]].astype("int32"))
        scaled = lets.bind(
            "scaled_diff",
            multiply_by_quantized_multiplier(d, params.input_multiplier, params.input_left_shift, rounding),
        )
        return tirx.Select(d >= params.diff_min, exp_on_negative_values(lets, scaled), tirx.const(0, "int32"))

    exps = rowwise("exp_q0_31", shape, [data, row_max], exp_term)
    j = te.reduce_axis((0, depth), "j")
    sum_of_exps = te.compute(
        shape[:-1],
        lambda *r: te.sum(rounding_divide_by_pot(exps(*r, j), ACCUMULATION_INTEGER_BITS), axis=j),
        name="sum_of_exps_q12_19",
    )

    def reciprocal(lets: Lets, ins, r) -> PrimExpr:
        total = lets.bind("sum", ins[0][r])
        headroom = lets.bind("headroom_plus_one", count_leading_zeros(total))
        shifted = lets.bind(
            "shifted_sum_minus_one",
            tirx.Cast("int32", (tirx.Cast("int64", total) << tirx.Cast("int64", headroom)) - (1 << 31)),
        )
        return one_over_one_plus_x(lets, shifted)

    def output_exponent(*r):
        num_bits_over_unit = ACCUMULATION_INTEGER_BITS - count_leading_zeros(sum_of_exps(*r))
        return num_bits_over_unit + 31 - bits

    scale = rowwise("reciprocal_q0_31", shape[:-1], [sum_of_exps], reciprocal)
    exponent = te.compute(shape[:-1], output_exponent, name="output_exponent")

    def output(*index):
        r = index[:-1]
        value = rounding_divide_by_pot(mul(scale(*r), exps(*index)), exponent(*r)) + out_min
        clamped = tirx.Cast(out_dtype, tirx.max(tirx.min(value, out_max), out_min))
        return tirx.Select(diff(index) >= params.diff_min, clamped, tirx.const(out_min, out_dtype))

    return te.compute(shape, output, name="softmax_int8")
