"""LOGISTIC and TANH: ``q(sigmoid(dq(x)))`` and ``q(tanh(dq(x)))`` -> TFLite Micro's integer kernels, each a
lookup of the int8 input in a 256-entry table of its outputs (``kernels.int8_tables``), a constant operand."""

from __future__ import annotations

from typing import Callable, Union

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op

from ...kernels import Rounding
from ...kernels.int8_tables import logistic_table, tanh_table
from ...kernels.quant_params import LogisticParams, logistic_params
from .graph import Quant
from .lowering import FixedCall, Lowering, LoweringContext, Mismatch
from .patterns import DequantizedActivation, ends_float_operator, float_operator_mismatch, match_unary
from .tables import lookup_call, table_constant

# The output quantization TFLite requires of each (its Prepare checks it); the table holds exactly that.
LOGISTIC_OUTPUT = Quant(np.float32(1 / 256), -128)
TANH_OUTPUT = Quant(np.float32(1 / 128), 0)

TableFunction = Callable[[LogisticParams, Rounding], np.ndarray]  # -> the int8[256] outputs


def _lowering(kind: str, relax_op: str, table: TableFunction, output: Quant) -> Lowering:
    data_operand = DequantizedActivation()
    core = is_op(relax_op)(data_operand.pattern)
    result = is_op("relax.quantize")(core, is_const(), is_const())

    def match(quantize: relax.Call, ctx: LoweringContext) -> Union[FixedCall, Mismatch]:
        unary = match_unary(result, data_operand, quantize, ctx)
        if unary is None or unary.out != output:
            return float_operator_mismatch(quantize, ctx)
        params = logistic_params(unary.data.quant.scale, unary.data.quant.zero_point)
        return FixedCall(lookup_call(kind, unary.matched[core], unary.data.tensor,
                                     table_constant(table, params, ctx.rounding)))

    return Lowering(frozenset({kind}), ends_float_operator, match)


LOGISTIC = _lowering("LOGISTIC", "relax.sigmoid", logistic_table, LOGISTIC_OUTPUT)
TANH = _lowering("TANH", "relax.tanh", tanh_table, TANH_OUTPUT)
