"""What the model check learned about a model that passed it: plain data, no TVM or ONNX objects."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_planner.plan import OperatorSupport


class ModelFormat(str, enum.Enum):
    TFLITE = "tflite"
    ONNX = "onnx"


@dataclass(frozen=True)
class TensorFacts:
    """A model input or output: its name in the model, static shape (element counts) and dtype name.

    dtype uses the names of `memory_planner.plan.DTYPE_BYTES` ("float32", "int8", ...).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's data, `memory_planner.plan.DTYPE_BYTES` per element."""
        from memory_planner.plan import DTYPE_BYTES

        return self.elements * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class OperatorFacts:
    """One operator of the model, in model order.

    `op` is the TFLite builtin name ("CONV_2D") or the ONNX op_type ("Conv"); `layer` is the name of its
    first output tensor (TFLite operators have no names) or the ONNX node name (its first output when the
    node is unnamed); `version` is the TFLite operator version or the ONNX opset of the node's domain;
    `refusal` why our compiler refuses it (`operator_support`), None when it is supported (only a check run with
    `refuse_unsupported=False` returns facts holding a refused operator).
    """

    op: str
    layer: str
    version: int
    refusal: str | None = None


@dataclass(frozen=True)
class ModelFacts:
    """A model that passed every check. `quantized` is True when any operator works on quantized tensors;
    `weight_bytes` counts the model's constant data as a bundle stores it, from the file alone (TFLite constant
    buffers; ONNX initializers and Constant values the computation reads, a dequantized one at its quantized
    bytes), `state_bytes` its TFLite variable tensors (the state a bundle keeps from run to run)."""

    path: str
    format: ModelFormat
    inputs: tuple[TensorFacts, ...]
    outputs: tuple[TensorFacts, ...]
    operators: tuple[OperatorFacts, ...]
    quantized: bool
    weight_bytes: int
    state_bytes: int

    @property
    def unsupported(self) -> tuple[OperatorFacts, ...]:
        """The operators our compiler refuses, in model order (empty unless checked with
        `refuse_unsupported=False`)."""
        return tuple(op for op in self.operators if op.refusal is not None)

    def operator_support(self) -> tuple[OperatorSupport, ...]:
        """The model's operator kinds in order of first occurrence, each with its count and refusal."""
        from memory_planner.plan import OperatorSupport

        counts: dict[tuple[str, str | None], int] = {}
        for op in self.operators:
            counts[(op.op, op.refusal)] = counts.get((op.op, op.refusal), 0) + 1
        return tuple(OperatorSupport(op, count, refusal) for (op, refusal), count in counts.items())

    def op_types(self) -> frozenset[str]:
        """The distinct operator names the model uses."""
        return frozenset(op.op for op in self.operators)
