"""Kernel kinds and their speed targets: what a call's instructions are divided by, and how many per unit it
should take, so report.md can mark a layer that runs far slower than its kind's target (issue 29).

A call's kind comes from the model operators it implements (TFLite operator codes and ONNX op types): a call
that multiply-accumulates is of the kind of its MAC operator (convolution, depthwise convolution, transpose
convolution, fully connected, batch matmul, recurrent cell) and its work is its MACs; a call without MACs is a
pool or reduction (work: the activation bytes it reads), a softmax, a resize, a requantization, data movement
(work: the bytes it writes) or elementwise (work: the bytes it writes times its elementwise operators, since
each fused operator is one more pass of arithmetic over them).

A kind's target, in instructions per unit, is its backend's for the profile's core
(`backends.backend.Backend.kind_targets`; None where the backend sets none). They are targets of integer
kernels (int8, 16x8): a call writing float gets none (packager.report).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

OVER_TARGET = 1.5
"""A call whose instructions per unit exceed its kind's target by more than this factor is marked."""


@dataclass(frozen=True)
class KernelKind:
    """A kind of kernel: its name, the unit its work is counted in, and the operators (TFLite codes and ONNX
    op types) that make a call of this kind."""

    name: str
    unit: str  # what one unit of work is: "MAC", "input byte", "output byte" or "output byte x operator"
    operators: frozenset[str]


def _kind(name: str, unit: str, *operators: str) -> KernelKind:
    return KernelKind(name, unit, frozenset(operators))


CONVOLUTION = _kind("convolution", "MAC", "CONV_2D", "CONV_3D", "Conv", "ConvInteger", "QLinearConv")
DEPTHWISE = _kind("depthwise convolution", "MAC", "DEPTHWISE_CONV_2D")
TRANSPOSE_CONVOLUTION = _kind("transpose convolution", "MAC", "TRANSPOSE_CONV", "ConvTranspose")
FULLY_CONNECTED = _kind("fully connected", "MAC", "FULLY_CONNECTED", "Gemm")
BATCH_MATMUL = _kind("batch matmul", "MAC", "BATCH_MATMUL", "MatMul", "MatMulInteger", "QLinearMatMul")
RECURRENT = _kind("recurrent cell", "MAC", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "LSTM",
                  "UNIDIRECTIONAL_SEQUENCE_RNN", "RNN", "GRU", "SVDF")
OTHER_MACS = _kind("other multiply-accumulates", "MAC")
POOL = _kind("pool or reduction", "input byte", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "MEAN", "SUM",
             "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "ARG_MAX", "ARG_MIN", "MaxPool", "AveragePool",
             "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ArgMax",
             "ArgMin", "QLinearAveragePool", "QLinearGlobalAveragePool")
SOFTMAX = _kind("softmax", "output byte", "SOFTMAX", "LOG_SOFTMAX", "Softmax", "LogSoftmax", "QLinearSoftmax")
RESIZE = _kind("resize", "output byte", "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "Resize", "Upsample")
REQUANTIZATION = _kind("requantization", "output byte", "QUANTIZE", "DEQUANTIZE", "CAST", "QuantizeLinear",
                       "DequantizeLinear", "Cast")
DATA_MOVEMENT = _kind("data movement", "output byte", "CONCATENATION", "RESHAPE", "TRANSPOSE", "PAD", "PADV2",
                      "MIRROR_PAD", "STRIDED_SLICE", "SLICE", "SPLIT", "SPLIT_V", "PACK", "UNPACK", "SQUEEZE",
                      "EXPAND_DIMS", "GATHER", "GATHER_ND", "TILE", "BROADCAST_TO", "SPACE_TO_DEPTH",
                      "DEPTH_TO_SPACE", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "REVERSE_V2", "Concat",
                      "Reshape", "Transpose", "Pad", "Slice", "Split", "Squeeze", "Unsqueeze", "Flatten", "Gather",
                      "Tile", "Expand", "DepthToSpace", "SpaceToDepth", "Identity")
ELEMENTWISE = _kind("elementwise", "output byte x operator")  # every other operator

MAC_KINDS = (RECURRENT, TRANSPOSE_CONVOLUTION, DEPTHWISE, CONVOLUTION, FULLY_CONNECTED, BATCH_MATMUL)
"""The kinds whose work is MACs, in the order a call's operators are tried (an LSTM before its products)."""

KINDS = (*MAC_KINDS, OTHER_MACS, POOL, SOFTMAX, RESIZE, ELEMENTWISE, REQUANTIZATION, DATA_MOVEMENT)
"""Every kind, MAC kinds first."""

def kernel_kind(operators: Sequence[str], macs: int) -> KernelKind:
    """The kind of a call implementing model operators of kinds `operators` with `macs` MACs. A call with
    MACs is of its first MAC operator's kind (OTHER_MACS when none is known); one without is, in this order, a
    softmax, a pool, a resize, elementwise (any operator of no other kind), a requantization, else data
    movement. A call of a MAC kind that counted no MACs stays of that kind (its MACs were not counted)."""
    for kind in MAC_KINDS:
        if any(op in kind.operators for op in operators):
            return kind
    if macs:
        return OTHER_MACS
    for kind in (SOFTMAX, POOL, RESIZE):
        if any(op in kind.operators for op in operators):
            return kind
    if any(elementwise_operator(op) for op in operators):
        return ELEMENTWISE
    if any(op in REQUANTIZATION.operators for op in operators):
        return REQUANTIZATION
    return DATA_MOVEMENT


def elementwise_operator(operator: str) -> bool:
    """Whether `operator` is of no kind but ELEMENTWISE."""
    return not any(operator in kind.operators for kind in KINDS)


def work_units(kind: KernelKind, operators: Sequence[str], macs: int, read_bytes: int, written_bytes: int) -> int:
    """The units of work (`kind.unit`) of a call of `kind` with these operators, MACs and activation bytes."""
    if kind.unit == "MAC":
        return macs
    if kind.unit == "input byte":
        return read_bytes
    if kind is ELEMENTWISE:
        return written_bytes * max(1, sum(elementwise_operator(op) for op in operators))
    return written_bytes
