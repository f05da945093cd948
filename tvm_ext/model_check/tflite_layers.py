"""The name a TFLite operator's layer goes by in our messages and generated C comments (no TVM).

TFLite operators have no names: a layer is named after its first output tensor. Some converters (TFLM's
keyword_scrambled models) leave every tensor unnamed, so an unnamed output names the layer by the
operator's index in its subgraph instead, and a message can still point at the operator.
"""

from __future__ import annotations


def tflite_layer_name(output_tensor_name: str, operator_index: int) -> str:
    """`output_tensor_name` when it is not empty, else `operator <operator_index>` (0-based, as in the file)."""
    return output_tensor_name or f"operator {operator_index}"
