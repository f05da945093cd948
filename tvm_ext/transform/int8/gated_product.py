"""A MUL of an int8 activation and TFLite's int8 LOGISTIC or TANH of that same activation (a swish, x * sigmoid(x):
Keras' "swish" / "silu", EfficientNet's and YOLOv5's activation, which TFLite's converter writes as LOGISTIC then
MUL) is a function of one int8 value: a lookup in the 256-entry table of its outputs
(``kernels.int8_tables.gated_product_table``: the gate as TFLM computes it, then TFLM's MUL), one load an element
where the gate's lookup and the MUL's rescale took 12-13 instructions an element on cortex-m4f and cortex-m55. The
lookup stays a kernel of its own (``lookup_call``'s ``fused_after``): folded into the convolution computing its
input, as other lookups are (``tvm_ext.transform.fold_lookups``: the helpers' table forms), it ran slower and grew the
code. Measured (an EfficientNet-B0 at width 0.25 on 64x56, swish and squeeze-excite; instructions, code B):
cortex-m4f 11,086,853, 60,772 -> 9,878,532, 60,180 (folded: 10,360,034, 66,340); cortex-m55 6,149,261, 51,168 ->
4,939,137, 50,584 (folded: 5,026,999, 61,136); the arena unchanged (44,352 B). The gate's own kernel stays where
another operator reads it; else it has no call of its own (the product's table computes it, as a view's operator
has none), and its layer is not in the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...kernels.quant_params import LogisticParams, logistic_params
from .graph import Graph, is_call_to
from .logistic import LOGISTIC_OUTPUT, TANH_OUTPUT
from .patterns import Int8Input

GATES = {"relax.sigmoid": ("LOGISTIC", LOGISTIC_OUTPUT), "relax.tanh": ("TANH", TANH_OUTPUT)}
"""The gates a product may be tabled with: (TFLite operator, its fixed output quantization) per Relax operator."""


@dataclass(frozen=True)
class GatedOperand:
    """The MUL's operand that is the gate's input (``data``), the gate (a GATES operator name) and its parameters."""

    data: Int8Input
    gate: str
    params: LogisticParams


def gated_operand(sources: tuple, operands: tuple[Optional[Int8Input], Optional[Int8Input]],
                  graph: Graph) -> Optional[GatedOperand]:
    """Where one of a MUL's operands (``sources``: the quantized tensors its two dequantizes read; ``operands``: the
    same as read for the lowering) is TFLite's int8 gate of the other (its quantize of a GATES operator of the other's
    dequantize, at the gate's fixed output quantization), that other operand and the gate; else None."""
    for gate_at, data_at in ((1, 0), (0, 1)):
        data = operands[data_at]
        quantized = graph.value_of(sources[gate_at])
        if data is None or not is_call_to(quantized, "relax.quantize"):
            continue
        unary = graph.value_of(quantized.args[0])
        found = next((gate for op, gate in GATES.items() if is_call_to(unary, op)), None)
        if found is None:
            continue
        gate, output = found
        source, quant = graph.dequantized(unary.args[0])
        if source is None or not source.same_as(sources[data_at]) or quant != data.quant \
                or graph.quant(quantized.args[1], quantized.args[2]) != output:
            continue
        return GatedOperand(data, gate, logistic_params(quant.scale, quant.zero_point))
    return None
