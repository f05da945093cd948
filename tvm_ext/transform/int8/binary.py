"""The int8 binary elementwise operators with a fused activation (ADD, SUB, MUL, DIV):
``q([act](op(dq(a), dq(b))))``, each operand an int8 activation or an int8 constant, broadcast.

An int8 ADD, SUB or MUL of an activation and a constant scalar (a model's input rescaling: MUL then ADD) is a
function of one int8 value: a lookup in the 256-entry table of its outputs (``kernels.int8_tables``, its clamp
included), one load per element where the kernel's two fixed-point rescales cost about 17 instructions per
element and operator on cortex-m4f (mobilenet_v3s_min_050_80_int8's rescaling), and fused after the layer
computing its input like any lookup; where the output has at least as many elements as the table has entries
(SCALAR_TABLE_KINDS)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
from tvm import relax, te, tirx
from tvm.relax.dpl import is_op

from backends.backend import AddValuesChoice

from ...kernels import Rounding
from ...kernels.elementwise import add_from_values, is_halved_operand, rescaled_table_args
from ...kernels.int8_tables import (TABLE_SIZE, binary_scalar_table, gated_product_table, rescaled_operand_table,
                                    scaled_operand_table)
from ...kernels.quant_params import ActivationRange, AddParams
from ...layers import BROADCAST_LOOKUP_ATTR
from .lowering import ClampedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .gated_product import gated_operand
from .graph import Graph, Quant
from .patterns import (DequantizedOperand, Int8Input, QuantizedResult, ends_float_operator, extract,
                       float_operator_mismatch)
from .tables import lookup_call, table_constant

SCALAR_TABLE_KINDS = frozenset({"ADD", "SUB", "MUL"})
"""The operators whose int8 form with a constant scalar operand is a lookup (``binary_scalar_table``), where the
output has at least TABLE_SIZE elements: a smaller one would add more bytes of table to the flash than it has
outputs (kws_gru_40x16_int8's unrolled gates on 96 units: 40 tables, 10 KB more flash for 2.5 % fewer
instructions; mobilenet_v3s_min_050_80_int8's input rescaling on 19,200 elements: 480,000 fewer)."""

# (lhs scale, rhs scale, output scale, rounding) -> the kernel's compile-time multipliers
ParamsOf = Callable[[np.float32, np.float32, np.float32, Rounding], object]


def binary_lowering(kind: str, relax_op: str, kernel: Callable[..., te.Tensor], params_of: ParamsOf,
                    int16_params_of: Optional[ParamsOf] = None,
                    tables: Callable[[], tuple[relax.Constant, ...]] = tuple,
                    backend_kernel: Callable[[LoweringContext], Optional[Callable[..., Optional[te.Tensor]]]]
                    = lambda ctx: None, rescaled_sign: Optional[int] = None,
                    values_first: Callable[[LoweringContext], bool] = lambda ctx: False) -> Lowering:
    """The lowering of the TFLite operator ``kind``, imported as the Relax op ``relax_op``, to ``kernel``
    (operands: both inputs, then the constants ``tables()`` gives; keywords: operand and output zero points,
    ``params_of``'s result, activation, rounding). With ``int16_params_of``, int16 operands and output of zero
    point 0 (TFLite Micro's int16 form) too. ``backend_kernel(ctx)``, where not None, is tried first on int8
    operands neither of which is a constant (a constant operator would be folded on the host, which cannot run
    a backend's helper calls): the generic ``kernel`` where it gives None. With ``rescaled_sign`` (the sign of
    rhs's term: ADD 1, SUB -1), the kernel from the operands' rescaled values (``values_call``) before both, except
    where the backend's kernel has two operands of one shape and not ``values_first(ctx)``; and where no backend
    kernel is tried, the int8
    operands that ``kernels.elementwise.rescaled_table_args`` names get their rescaled values' tables (`rescaled_tables`) as
    the kernel's operands after both inputs (``tables()`` gives none then)."""
    lhs_operand, rhs_operand = DequantizedOperand(), DequantizedOperand()
    core = is_op(relax_op)(lhs_operand.pattern, rhs_operand.pattern)
    result = QuantizedResult(core)

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[ClampedCall, TableCall, Mismatch]:
        matched = extract(result.pattern, quantize, ctx)
        if matched is None:
            return float_operator_mismatch(quantize, ctx)
        lhs, rhs, out = lhs_operand.read(matched, ctx), rhs_operand.read(matched, ctx), result.read(matched, ctx)
        if lhs is None or rhs is None or out is None:
            return float_operator_mismatch(quantize, ctx)
        dtypes = {str(operand.tensor.ty.dtype) for operand in (lhs, rhs)} | {str(quantize.ty.dtype)}
        zero_points = {lhs.quant.zero_point, rhs.quant.zero_point, out.quant.zero_point}
        if dtypes == {"int16"} and int16_params_of is not None and zero_points == {0}:
            params_of_dtype = int16_params_of
        elif dtypes == {"int8"}:
            params_of_dtype = params_of
        else:
            return float_operator_mismatch(quantize, ctx)
        params = params_of_dtype(lhs.quant.scale, rhs.quant.scale, out.quant.scale, ctx.rounding)
        scalar = _scalar_constant(lhs, rhs, ctx.graph) if kind in SCALAR_TABLE_KINDS and dtypes == {"int8"} \
            and elements_of(quantize) >= TABLE_SIZE else None
        if scalar is not None:
            data, constant, data_is_lhs = scalar
            arguments = (kind, data.quant.zero_point, constant.value, constant.quant.zero_point, data_is_lhs,
                         out.quant.zero_point, params)
            return TableCall(lambda activation: lookup_call(kind, matched[core], data.tensor, table_constant(
                binary_scalar_table, *arguments, activation, ctx.rounding)), out.activation)
        gated = gated_operand(tuple(matched[operand.pattern].args[0] for operand in (lhs_operand, rhs_operand)),
                              (lhs, rhs), ctx.graph) if kind == "MUL" and dtypes == {"int8"} \
            and elements_of(quantize) >= TABLE_SIZE else None
        if gated is not None:  # a swish: one table of the gate's input, a kernel of its own (gated_product)
            gate_arguments = (gated.gate, gated.params, gated.data.quant.zero_point, out.quant.zero_point, params)
            return TableCall(lambda activation: lookup_call(kind, matched[core], gated.data.tensor, table_constant(
                gated_product_table, *gate_arguments, activation, ctx.rounding), fused_after=False), out.activation)
        constants = [ctx.graph.constant(operand.tensor) is not None for operand in (lhs, rhs)]
        computed = not any(constants)
        own = backend_kernel(ctx) if dtypes == {"int8"} and computed else None
        # the backend's own kernel first on two computed operands of one shape (Helium's vector ADD: 3.4
        # instructions per output byte on cortex-m55 where the values' kernel takes 9.2)
        # (unless the backend's kernel from values tabled at compile time comes first in this model: Helium's, where
        # its smaller code pays its instructions)
        own_first = own is not None and not values_first(ctx) \
            and [int(d) for d in lhs.tensor.ty.shape] == [int(d) for d in rhs.tensor.ty.shape]
        # one computed operand at least: an operator of constants is folded on the host, which cannot run a backend's
        # helper calls (a constant operand is a weight of the kernel: a positional embedding's ADD)
        if rescaled_sign is not None and dtypes == {"int8"} and not all(constants) and not own_first:
            from_values = values_call(kind, matched[core], lhs, rhs, out.quant.zero_point, params, rescaled_sign,
                                      ctx)
            if from_values is not None:
                return ClampedCall(from_values, out.activation)
        chosen = kernel if own is None else first_fitting(own, kernel)
        rescaled, tabled = rescaled_tables(lhs, rhs, elements_of(quantize), params, rescaled_sign, ctx.rounding) \
            if rescaled_sign is not None and own is None and dtypes == {"int8"} else ((), {})
        call = KernelCall(kind, matched[core], chosen, (lhs.tensor, rhs.tensor, *(rescaled or tables())),
                          {"lhs_zero_point": lhs.quant.zero_point, "rhs_zero_point": rhs.quant.zero_point,
                           "output_zero_point": out.quant.zero_point, "params": params, "rounding": ctx.rounding,
                           **tabled},
                          # its tables' loads indexed by the operands: the pattern of the kernel without them
                          func_attrs={BROADCAST_LOOKUP_ATTR: True} if rescaled else {})
        return ClampedCall(call, out.activation)

    return Lowering(frozenset({kind}), ends_float_operator, match)


@dataclass(frozen=True)
class _Scalar:
    """An int8 constant scalar operand: its value and quantization."""

    value: int
    quant: Quant


def elements_of(expr: relax.Expr) -> int:
    """The number of elements of ``expr``'s tensor (0 where its shape is not known)."""
    shape = getattr(expr.ty, "shape", None)
    if shape is None or not all(isinstance(d, tirx.IntImm) for d in shape):
        return 0
    return int(np.prod([int(d) for d in shape]))


def _scalar_constant(lhs: Int8Input, rhs: Int8Input, graph: Graph) -> Optional[tuple[Int8Input, _Scalar, bool]]:
    """(the activation operand, the other, a constant of one element, whether the activation is the left one)
    where exactly one operand is such a constant in ``graph``, else None."""
    values = [graph.constant(operand.tensor) for operand in (lhs, rhs)]
    scalars = [None if value is None or value.size != 1 else int(value.reshape(-1)[0]) for value in values]
    if (scalars[0] is None) == (scalars[1] is None):
        return None
    if scalars[1] is not None:
        return lhs, _Scalar(scalars[1], rhs.quant), True
    return rhs, _Scalar(scalars[0], lhs.quant), False


@dataclass(frozen=True)
class TableCall:
    """A matched operator whose kernel is a table lookup built for its clamp: ``make(activation)``, the call
    for the clamp ``activation`` (``self.activation`` narrowed by a fused clip)."""

    make: Callable[[ActivationRange], KernelCall]
    activation: ActivationRange

    def kernel_call(self, activation: ActivationRange) -> KernelCall:
        """The lookup's call, its table clamped to ``activation``."""
        return self.make(activation)


def rescaled_tables(lhs: Int8Input, rhs: Int8Input, elements: int, params: AddParams, sign: int,
                    rounding: Rounding) -> tuple[tuple[relax.Constant, ...], dict[str, bool]]:
    """The rescaled-value tables (``int8_tables.rescaled_operand_table``, weights) of the operands of an ADD
    (``sign`` 1), SUB or SQUARED_DIFFERENCE (-1) of ``params`` and an output of ``elements`` elements that
    ``rescaled_table_args`` names, lhs first, and the kernel's keywords saying which operands they are
    (``lhs_tabled``, ``rhs_tabled``; none where no operand is tabled)."""
    specs = rescaled_table_args(str(lhs.tensor.ty.dtype), elements, params, lhs.quant.zero_point,
                                rhs.quant.zero_point, sign)
    tables = tuple(table_constant(rescaled_operand_table, *spec, rounding) for spec in specs if spec is not None)
    return tables, {"lhs_tabled": specs[0] is not None, "rhs_tabled": specs[1] is not None} if tables else {}


VALUES_ELEMENTS = 256
"""The fewest output elements of an int8 ADD or SUB that the backend's kernel from the operands' doubled values
(``LoweringContext.int8_add_values``) computes: its table (1,024 B of flash; TFLite's larger-scale operand is a
shift, not tabled; one table serves the layers of one operand quantization) saves about 4 instructions per element
against the generic kernel where that tables the operand too (``elementwise.TABLED_ELEMENTS`` elements and more)
and about 8 where it computes the rescale (fewer; cortex-m4f); smaller ones (an unrolled GRU's 64-unit gates) keep
the generic kernel, which fuses with their neighbours."""


PRESCALED_ELEMENTS = 256
"""The most elements of a constant operand that `values_call` gives the kernel as its terms (int32: 4 bytes each,
at most the 1,024 B of a table) instead of a table indexed by its bytes."""


def values_call(kind: str, core: relax.Call, lhs: Int8Input, rhs: Int8Input, output_zero_point: int,
                params: AddParams, sign: int, ctx: LoweringContext, squared: bool = False) -> Optional[KernelCall]:
    """The call of the backend's int8 ADD or SUB (``sign`` 1 or -1), or with ``squared`` SQUARED_DIFFERENCE (sign
    -1), of two operands not both constant, from their rescaled values (``LoweringContext.int8_add_values``), or
    None where the backend has none, the output has fewer than VALUES_ELEMENTS elements and no operand is a small
    constant (below), the output stage does not fit (``elementwise.add_from_values``), or the flash budget does not
    grant the call's tables and constant terms together (a table granted once, however many layers read it). The
    operands broadcast (TFLite's rule).

    The kernel sums the operands' terms: ADD's and SUB's rescaled values doubled (their sum s twice TFLite's raw
    sum), SQUARED_DIFFERENCE's as they are (the difference d, then s = 2 d^2). An operand of multiplier 1/2
    (TFLite's larger-scale operand: its rescale is exactly (x - zero point) << (left shift - 1)) is not tabled: the
    kernel takes it as x times ``lhs_scale`` or ``rhs_scale`` (0 for a tabled operand) and its zero point's term is
    in the other operand's table (``int8_tables.scaled_operand_table``, rhs's times ``sign``); the kernel's operands
    are lhs, rhs, then the tables of the tabled operands, lhs's first; where both are of multiplier 1/2 (equal
    scales) lhs is tabled. A constant operand of at most PRESCALED_ELEMENTS elements is the kernel's operand as its
    terms (int32, computed here as the kernel would: its table's entries, or its shift), read by the element's index
    (no table: whatever the output's size where the other operand is TFLite's larger-scale one, a shift; a
    per-channel addend)."""
    if ctx.int8_add_values is None:
        return None
    constants = [ctx.graph.constant(operand.tensor) for operand in (lhs, rhs)]
    prescaled = [value is not None and value.size <= PRESCALED_ELEMENTS for value in constants]
    if elements_of(core) < VALUES_ELEMENTS and not any(prescaled):
        return None
    left_shift, factor = params.left_shift, 1 if squared else 2
    signs = (1, sign)
    multipliers = [(int(m), int(s)) for m, s in (params.input1, params.input2)]
    halved = [is_halved_operand(m, left_shift) for m in multipliers]
    halved[0] = halved[0] and not halved[1]  # equal scales: lhs tabled, rhs shifted
    shifted = [signs[k] * (factor << (left_shift - 1)) if halved[k] else 0 for k in range(2)]
    operands = (lhs, rhs)
    specs = [None if halved[k] else (
        operands[k].quant.zero_point, left_shift, multipliers[k], signs[k] * factor,
        -shifted[1 - k] * operands[1 - k].quant.zero_point, ctx.rounding) for k in range(2)]
    values = [None if spec is None else scaled_operand_table(*spec) for spec in specs]
    largest = sum(128 * abs(shifted[k]) if values[k] is None else int(np.abs(values[k].astype(np.int64)).max())
                  for k in range(2))
    stage = add_from_values(2 * largest * largest if squared else largest, params.output, output_zero_point,
                            ctx.rounding)
    if stage is None:
        return None
    # a small constant operand: its terms at compile time (int32, its shape), read by the element's index
    kernel_operands = [relax.const((shifted[k] * constants[k].astype(np.int32) if values[k] is None
                                    else values[k][constants[k].astype(np.uint8)]).astype(np.int32))
                       if prescaled[k] else operands[k].tensor for k in range(2)]
    tables = tuple(table_constant(scaled_operand_table, *spec)
                   for k, spec in enumerate(specs) if spec is not None and not prescaled[k])
    if tables and elements_of(core) < VALUES_ELEMENTS:  # a table for the activation: not for a small output
        return None
    if ctx.int8_add_values_pays is not None:
        generic = rescaled_table_args(str(lhs.tensor.ty.dtype), elements_of(core), params, lhs.quant.zero_point,
                                      rhs.quant.zero_point, sign)
        generic_bytes = TABLE_SIZE * 4 * sum(spec is not None for spec in generic)
        added = sum(TABLE_SIZE * 4 for table in tables if not ctx.flash_budget.granted(table)) + sum(
            4 * constants[k].size for k in range(2) if prescaled[k]) - generic_bytes
        if not ctx.int8_add_values_pays(AddValuesChoice(elements_of(core), generic_bytes > 0, added)):
            return None
    # the tables and the constant operands' terms: one choice, granted whole or not at all
    if not ctx.flash_budget.grants_each([(table, TABLE_SIZE * 4) for table in tables] + [
            (operand, 4 * constants[k].size) for k, operand in enumerate(kernel_operands) if prescaled[k]]):
        return None
    multiplier, right, bias = stage
    return KernelCall(kind, core, ctx.int8_add_values, (*kernel_operands, *tables),
                      {"multiplier": multiplier, "right": right, "bias": bias, "lhs_scale": shifted[0],
                       "rhs_scale": shifted[1], "squared": squared},
                      # its tables' loads indexed by the operands: the pattern of the kernel without them
                      func_attrs={BROADCAST_LOOKUP_ATTR: True})


@functools.cache
def first_fitting(own: Callable[..., Optional[te.Tensor]],
                   kernel: Callable[..., te.Tensor]) -> Callable[..., te.Tensor]:
    """The kernel giving ``own``'s tensor on its operands, or ``kernel``'s where ``own`` gives None: one function
    per pair (identical calls of it share their PrimFunc), with ``kernel``'s signature (which names the operands)."""

    @functools.wraps(kernel)
    def chosen(*args, **kwargs) -> te.Tensor:
        tensor = own(*args, **kwargs)
        return kernel(*args, **kwargs) if tensor is None else tensor

    return chosen
