"""LOGISTIC and TANH: ``q(sigmoid(dq(x)))`` and ``q(tanh(dq(x)))`` -> TFLite Micro's integer kernels: of an int8
input a lookup in a 256-entry table of its outputs (``kernels.int8_tables``), a constant operand; of an int16 one
(16x8: zero points 0, output scale 2^-15) TFLM's interpolation in its sigmoid table (``kernels.sigmoid_int16``)."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import Rounding
from ...kernels.int8_tables import logistic_table, tanh_table
from ...kernels.quant_params import (INT16_SIGMOID_OUTPUT_POWER, LogisticParams, checked_log2, int16_sigmoid_scaling,
                                     logistic_params)
from ...kernels.sigmoid_int16 import (LOGISTIC_INT16, SIGMOID_TABLE, TANH_INT16, SigmoidForm, scaling_operand,
                                      sigmoid_int16)
from .graph import Quant
from .lowering import FixedCall, KernelCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary
from .tables import lookup_call, table_constant

# The output quantization TFLite requires of each (its Prepare checks it); the table holds exactly that.
LOGISTIC_OUTPUT = Quant(np.float32(1 / 256), -128)
TANH_OUTPUT = Quant(np.float32(1 / 128), 0)

TableFunction = Callable[[LogisticParams, Rounding], np.ndarray]  # -> the int8[256] outputs


def _lowering(kind: str, relax_op: str, table: TableFunction, output: Quant, form: SigmoidForm,
              power_of_two_shifts: tuple[int, ...]) -> Lowering:
    """``kind``'s lowering: int8 as ``table`` gives it with the output quantization ``output``; int16 as TFLM's
    ``form``, a power-of-two input scale of a left shift in ``power_of_two_shifts`` taken as TFLM takes it."""
    data_operand = DequantizedActivation()
    core = is_op(relax_op)(data_operand.pattern)
    result = is_op("relax.quantize")(core, is_const(), is_const())

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        unary = match_unary(result, data_operand, quantize, ctx)
        if unary is not None and str(unary.data.tensor.ty.dtype) == "int16" == str(quantize.ty.dtype):
            scaling = int16_sigmoid_scaling(unary.data.quant.scale, power_of_two_shifts)
            if unary.data.quant.zero_point != 0 or unary.out.zero_point != 0 or scaling is None \
                    or checked_log2(unary.out.scale) != (INT16_SIGMOID_OUTPUT_POWER, True):
                return float_operator_mismatch(quantize, ctx)
            return FixedCall(KernelCall(kind, unary.matched[core], sigmoid_int16,
                                        (unary.data.tensor, table_constant(_sigmoid_table),
                                         table_constant(scaling_operand, scaling)), {"form": form}))
        if unary is None or unary.out != output:
            return float_operator_mismatch(quantize, ctx)
        params = logistic_params(unary.data.quant.scale, unary.data.quant.zero_point)
        return FixedCall(lookup_call(kind, unary.matched[core], unary.data.tensor,
                                     table_constant(table, params, ctx.rounding)))

    return Lowering(frozenset({kind}), ends_float_operator, match)


def _sigmoid_table() -> np.ndarray:
    return SIGMOID_TABLE


LOGISTIC = _lowering("LOGISTIC", "relax.sigmoid", logistic_table, LOGISTIC_OUTPUT, LOGISTIC_INT16, (0,))
TANH = _lowering("TANH", "relax.tanh", tanh_table, TANH_OUTPUT, TANH_INT16, (0, 1))
