"""Whether an imported TFLite model is quantized, as an attribute of its main function.

The int8 pass (tvm_ext/transform/lower_quantized_to_integer.py) lowers a graph that quantizes or
dequantizes anything; a quantized model made only of operators TVM imports on the integer tensors
themselves (pools, ARG_MAX, data movement) has neither, and would otherwise compile TVM's own integer
kernels (its avg_pool2d rounds down, TFLite Micro to nearest). The frontend marks such a main.
"""

from __future__ import annotations

QUANTIZED_MODEL_ATTR = "tvm_ext.quantized_model"  # main's attribute: the model's tensors are quantized integers

_QUANTIZED_TYPES = frozenset({"int8", "int16", "uint8"})


def tflite_has_quantized_tensors(subgraph, dtype_name) -> bool:
    """Whether a tensor of the TFLite ``subgraph`` is an integer of ``_QUANTIZED_TYPES`` with quantization
    scales; ``dtype_name`` maps a TFLite tensor type code to its dtype name."""
    for index in range(subgraph.TensorsLength()):
        tensor = subgraph.Tensors(index)
        quantization = tensor.Quantization()
        if dtype_name(tensor.Type()) in _QUANTIZED_TYPES and quantization is not None and quantization.ScaleLength():
            return True
    return False
