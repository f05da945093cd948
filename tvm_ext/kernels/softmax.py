"""TE definition of TFLite's int8 SOFTMAX (reference_ops::Softmax, the kernel TFLite Micro runs).

All integer: each element's exp term (its difference to the row maximum rescaled into Q5.26 and exponentiated
with gemmlowp's fixed-point exp_on_negative_values, as Q0.31) is read from a compile-time table indexed by
that difference (``int8_tables.softmax_exp_table``); the terms are summed in Q12.19, the sum is inverted once
per row with gemmlowp's Newton-Raphson one_over_one_plus_x_for_x_in_0_1, and each term is scaled to the
fixed output quantization (scale 1/256, zero point -128).
"""

from __future__ import annotations

from typing import Callable

from tvm import te, tirx
from tvm.ir.expr import Expr as PrimExpr

from .fixed_point import (
    INT32_MAX,
    count_leading_zeros,
    doubling_high_mul as mul,
    rounding_divide_by_pot,
    saturating_left_shift,
)
from .fixed_point_numpy import FORTY_EIGHT_SEVENTEENTHS, MINUS_THIRTY_TWO_SEVENTEENTHS
from .int8_tables import PAIR_DIFFERENCES

ACCUMULATION_INTEGER_BITS = 12
# The int32 values one Lets may name (the row reciprocal names 14): an upper bound, TVM keeps the slots used, and
# a scratch array of at most codegen_c.LOCAL_BUFFER_MAX_BYTES stays a local array of the C function.
FIXED_POINT_TEMPS = 16


class Lets:
    """Names intermediate values: each is stored once into a small local array and read back.

    TIR ``Let``/``Bind`` would be the natural form, but TVM 0.27's buffer-region analysis substitutes
    let-bound values into one another, and the fixed-point polynomials then grow without end. A value
    read back from memory stays opaque to it, and the C is the same sequence of assignments.
    """

    def __init__(self) -> None:
        self._values: list[PrimExpr] = []
        # Global scope: TVM's C code generator prints no "local" buffers; tvm_ext.codegen.codegen_c makes this one a
        # local array of the C function, or an arena scratch argument when larger than LOCAL_BUFFER_MAX_BYTES.
        self.scratch = tirx.decl_buffer((FIXED_POINT_TEMPS,), "int32", name="fixed_point_temps")

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


def rowwise(name: str, shape: list[int], inputs: list[te.Tensor], value: Callable, dtype: str = "int32") -> te.Tensor:
    """A ``dtype`` tensor of ``shape`` whose element is ``value(lets, input_buffers, index)``.

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

    return te.extern(tuple(shape), inputs, build, name=name, dtype=dtype)


def _half_denominator_reciprocal(lets: Lets, a: PrimExpr) -> PrimExpr:
    """2/(1+a) as Q2.29 for a Q0.31 a in [0, 1]: three Newton-Raphson steps from 48/17 - 32/17 * d, d = (1+a)/2."""
    total = tirx.Cast("int64", a) + INT32_MAX
    half_denominator = lets.bind(
        "half_denominator", tirx.Cast("int32", tirx.truncdiv(total + tirx.Select(total >= 0, 1, -1).astype("int64"), 2))
    )
    x = lets.bind("nr", FORTY_EIGHT_SEVENTEENTHS + mul(half_denominator, MINUS_THIRTY_TWO_SEVENTEENTHS))
    for _ in range(3):
        one_minus = lets.bind("one_minus", (1 << 29) - mul(half_denominator, x))
        x = lets.bind("nr", x + saturating_left_shift(lets.bind("nr_step", mul(x, one_minus)), 2))
    return x


def one_over_one_plus_x(lets: Lets, a: PrimExpr) -> PrimExpr:
    """gemmlowp 1/(1+a) for a Q0.31 a in [0, 1), as Q0.31."""
    return saturating_left_shift(_half_denominator_reciprocal(lets, a), 1)


def softmax_int8(data: te.Tensor, exp_table: te.Tensor, *, out_dtype: str = "int8") -> te.Tensor:
    """Softmax over the last axis of an int8 tensor; output int8 with scale 1/256 and zero point -128, or int16
    with scale 1/65536 and zero point -32768 (TFLM's int8-in, int16-out softmax: the same arithmetic, the
    output exponent and offset of the wider type).

    ``exp_table`` is int32[256] (``int8_tables.softmax_exp_table``): the Q0.31 exp term of an input ``k`` below
    its row maximum, 0 for a difference TFLM leaves out (an element whose term is 0 contributes nothing to the
    sum and is written as the output minimum, as TFLM writes it)."""
    bits = 8 if out_dtype == "int8" else 16
    out_min, out_max = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    shape = [int(d) for d in data.shape]
    depth = shape[-1]
    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute(shape[:-1], lambda *r: te.max(data(*r, k), axis=k), name="row_max")

    def exps(*index) -> PrimExpr:
        return exp_table[row_max(*index[:-1]).astype("int32") - data(*index).astype("int32")]

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

    def output(lets: Lets, ins, index) -> PrimExpr:
        data_in, row_max_in, table, row_scale, row_exponent = ins
        r = index[:-1]
        exp = lets.bind("exp", table[row_max_in[r].astype("int32") - data_in[index].astype("int32")])
        # Named: TVM's simplifier takes seconds over the product repeated inside the variable rounding shift.
        scaled = lets.bind("scaled_exp", mul(row_scale[r], exp))
        value = rounding_divide_by_pot(scaled, row_exponent[r]) + out_min
        return tirx.Cast(out_dtype, tirx.max(tirx.min(value, out_max), out_min))

    return rowwise("softmax_int8", shape, [data, row_max, exp_table, scale, exponent], output, out_dtype)


def softmax_pair_int8(data: te.Tensor, pair_table: te.Tensor) -> te.Tensor:
    """Softmax over a last axis of two int8 elements (output int8, scale 1/256, zero point -128, or int16, scale
    1/65536, zero point -32768: the table's type) as one lookup per element: ``pair_table[x - the row's other
    element + 255]`` (``int8_tables.softmax_pair_table``, int8[511] or int16[511]), which a row of two is a
    function of. The generic kernel's arithmetic per row (maximum, sum, reciprocal,
    scaling) happens once, at compile time."""
    shape = [int(d) for d in data.shape]
    if shape[-1] != 2 or [int(d) for d in pair_table.shape] != [PAIR_DIFFERENCES]:
        raise ValueError(f"a pair softmax reads rows of 2 and a table of {PAIR_DIFFERENCES}, not {shape} and "
                         f"{list(pair_table.shape)}")

    def output(*index) -> PrimExpr:
        *row, j = index
        difference = data(*row, j).astype("int32") - data(*row, 1 - j).astype("int32")
        return pair_table[difference + (PAIR_DIFFERENCES // 2)]

    return te.compute(shape, output, name="softmax_pair_int8")
