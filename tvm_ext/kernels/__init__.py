"""TE/TIR compute definitions of TFLite's int8 kernels and the fixed-point requantization helpers.

Every kernel is pure TE, so TVM's C codegen writes it as plain integer C: int32 accumulation and
TFLite's fixed-point multiplier/shift (double or single rounding, see ``fixed_point.Rounding``).
"""

from .activation import leaky_relu_int8, relu6_int8, relu_int8
from .conv import WeightLayout, conv2d_int8, depthwise_conv2d_int8
from .dense import fully_connected_int8
from .edges import dequantize_int8, quantize_int8
from .elementwise import add_int8, maximum_int8, minimum_int8, mul_int8, squared_difference_int8, sub_int8
from .fixed_point import Rounding
from .lookup import lookup_int8
from .pool import average_pool2d_integer, max_pool2d_integer
from .requantize import OutputStage
from .softmax import softmax_int8, softmax_pair_int8

__all__ = [
    "OutputStage",
    "Rounding",
    "WeightLayout",
    "add_int8",
    "average_pool2d_integer",
    "conv2d_int8",
    "depthwise_conv2d_int8",
    "dequantize_int8",
    "fully_connected_int8",
    "leaky_relu_int8",
    "lookup_int8",
    "max_pool2d_integer",
    "maximum_int8",
    "minimum_int8",
    "mul_int8",
    "quantize_int8",
    "relu6_int8",
    "relu_int8",
    "softmax_int8",
    "softmax_pair_int8",
    "squared_difference_int8",
    "sub_int8",
]
