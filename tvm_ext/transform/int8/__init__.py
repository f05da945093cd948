"""The int8 lowerings of ``LowerQuantizedToInteger``, one module per TFLite operator (or family).

``LOWERINGS`` is the one registration table: adding an operator is adding its module (a
``tvm_ext.transform.int8.lowering.Lowering``) to this tuple, plus its test. Order matters only among the
lowerings that complete the same binding (the quantize that ends a float operator): the first match wins.
"""

from __future__ import annotations

from . import add, conv, edges, fully_connected, pool, reshape, softmax, svdf
from . import mul
from . import sub
from . import div
from . import relu
from . import leaky_relu
from . import maximum_minimum
from . import squared_difference
from . import logistic
from . import hard_swish
from . import rsqrt
from . import absolute
from . import transpose_conv
from . import batch_matmul
from . import data_movement
from . import concatenation
from . import pack
from . import unpack
from . import split
from . import reduce
from . import arg_max
from . import resize
from . import prelu
from . import l2_normalization
from . import lstm
from . import onnx_qlinear
from .lowering import Lowering

LOWERINGS: tuple[Lowering, ...] = (
    svdf.LOWERING,  # before the MAC lowerings, which would also claim SVDF's quantizes (and not match)
    lstm.LOWERING,
    concatenation.LOWERING,  # before the lowerings of any float operator, so its own Mismatch is the one named
    reduce.REDUCE_MAX,  # ditto (a requantizing one)
    reduce.REDUCE_MIN,
    conv.LOWERING,
    transpose_conv.LOWERING,
    batch_matmul.LOWERING,
    fully_connected.LOWERING,
    add.LOWERING,
    mul.LOWERING,
    sub.LOWERING,
    div.LOWERING,
    relu.RELU,
    relu.RELU6,
    leaky_relu.LOWERING,
    maximum_minimum.MAXIMUM,
    maximum_minimum.MINIMUM,
    squared_difference.LOWERING,
    logistic.LOGISTIC,
    logistic.TANH,
    hard_swish.LOWERING,
    rsqrt.LOWERING,
    absolute.LOWERING,
    softmax.LOWERING,
    reduce.MEAN,
    reduce.SUM,
    arg_max.ARG_MAX,
    arg_max.ARG_MIN,
    resize.BILINEAR,
    resize.NEAREST_NEIGHBOR,
    prelu.LOWERING,
    l2_normalization.LOWERING,
    onnx_qlinear.LOWERING,
    pool.AVERAGE_POOL,
    pool.MAX_POOL,
    reshape.LOWERING,
    data_movement.TRANSPOSE,
    data_movement.PAD,
    data_movement.SQUEEZE,
    data_movement.EXPAND_DIMS,
    data_movement.SLICE,
    pack.LOWERING,
    unpack.LOWERING,
    split.LOWERING,
    edges.QUANTIZE,
    edges.DEQUANTIZE,
)


def lowered_operators() -> frozenset[str]:
    """Every TFLite operator name some lowering of the table emits."""
    return frozenset().union(*(lowering.operators for lowering in LOWERINGS))
