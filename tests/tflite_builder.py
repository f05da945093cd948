"""Build small .tflite models in tests: any builtin operator, int8 tensors, constants, several inputs/outputs.

A model is data (``Model``: tensors, operators, graph inputs/outputs); ``build(model)`` serializes it with the
``tflite`` package's flatbuffer API. Example, an int8 MUL by a constant scalar with a fused RELU::

    from tflite.ActivationFunctionType import ActivationFunctionType

    x = Tensor("x", (1, 5), "int8", Quantization((0.05,), (3,)))
    two = Tensor("two", (), "int8", Quantization((0.1,), (0,)), data=np.array(20, np.int8))
    y = Tensor("y", (1, 5), "int8", Quantization((0.02,), (-1,)))
    mul = Operator("MUL", inputs=(0, 1), outputs=(2,),
                   options=Options("MulOptions", {"FusedActivationFunction": ActivationFunctionType.RELU}))
    Path("mul.tflite").write_bytes(build(Model([x, two, y], [mul], inputs=(0,), outputs=(2,))))

A custom operator is ``Operator("CUSTOM", ..., custom_code="SignalWindow", custom_options=flexbuffer bytes)``
(TFLite's converter writes a custom operator's attributes as a flexbuffer map:
``flatbuffers.flexbuffers.Dumps({"shift": 12})``).

Limits (kept small on purpose): one subgraph; options fields are scalars (ints, floats, bools) or tuples of
ints (int32 vectors, e.g. SqueezeOptions' SqueezeDims); a tensor's constant data is stored little-endian in
its own buffer (buffer 0 is TFLite's empty sentinel).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import numpy as np

_TENSOR_TYPES = {"float32": "FLOAT32", "int8": "INT8", "int16": "INT16", "int32": "INT32", "uint8": "UINT8",
                 "int64": "INT64", "bool": "BOOL", "uint32": "UINT32", "uint64": "UINT64"}


@dataclass(frozen=True)
class Quantization:
    """Per-tensor (one scale) or per-channel (one scale per index of ``axis``) affine quantization."""

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int = 0


@dataclass(frozen=True)
class Tensor:
    """A tensor of the subgraph; ``data`` (of ``dtype``, of ``shape``) makes it a constant."""

    name: str
    shape: tuple[int, ...]
    dtype: str  # a numpy dtype name, see _TENSOR_TYPES
    quantization: Optional[Quantization] = None
    data: Optional[np.ndarray] = None
    variable: bool = False  # a TFLite variable tensor (an operator's state, e.g. an LSTM's)


@dataclass(frozen=True)
class Options:
    """An operator's BuiltinOptions table: its flatbuffer name (e.g. "MulOptions") and field values by the
    ``tflite`` package's field names (e.g. {"FusedActivationFunction": 1}); absent fields take TFLite's
    defaults."""

    table: str
    fields: dict[str, Union[int, float, bool, tuple[int, ...]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Operator:
    """One operator: a builtin's name (tflite.BuiltinOperator), tensor indices, its options table; a "CUSTOM"
    operator's code and options bytes."""

    builtin: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options: Optional[Options] = None
    version: int = 1
    custom_code: Optional[str] = None
    custom_options: Optional[bytes] = None

    @property
    def code(self) -> tuple[str, Optional[str]]:
        """What tells its operator code apart from the others: the builtin name and the custom code."""
        return self.builtin, self.custom_code


@dataclass
class Model:
    """A one-subgraph model; ``inputs``/``outputs`` index ``tensors``."""

    tensors: list[Tensor]
    operators: list[Operator]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]



@dataclass
class ModelBuilder:
    """A ``Model`` built tensor by tensor: ``add`` returns a tensor's index, ``op`` appends an operator, ``inputs``
    and ``outputs`` collect the graph's."""

    tensors: list[Tensor] = field(default_factory=list)
    operators: list[Operator] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def add(self, tensor: Tensor) -> int:
        self.tensors.append(tensor)
        return len(self.tensors) - 1

    def op(self, builtin: str, inputs: tuple[int, ...], output: Tensor, options: Optional[Options] = None,
           version: int = 1) -> int:
        """Append ``builtin`` reading ``inputs`` and writing the new tensor ``output``; the output's index."""
        index = self.add(output)
        self.operators.append(Operator(builtin, tuple(inputs), (index,), options, version))
        return index

    def model(self) -> Model:
        return Model(self.tensors, self.operators, tuple(self.inputs), tuple(self.outputs))

def _int_vector(b, values) -> int:
    b.StartVector(4, len(values), 4)
    for value in reversed(values):
        b.PrependInt32(int(value))
    return b.EndVector()


def _offset_vector(b, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def quantization_table(b, quant: Quantization) -> int:
    """Write ``quant`` as a QuantizationParameters table with builder ``b``; its offset."""
    import tflite

    b.StartVector(4, len(quant.scales), 4)
    for scale in reversed(quant.scales):
        b.PrependFloat32(scale)
    scales = b.EndVector()
    b.StartVector(8, len(quant.zero_points), 8)
    for zero_point in reversed(quant.zero_points):
        b.PrependInt64(zero_point)
    zero_points = b.EndVector()
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scales)
    tflite.QuantizationParametersAddZeroPoint(b, zero_points)
    tflite.QuantizationParametersAddQuantizedDimension(b, quant.axis)
    return tflite.QuantizationParametersEnd(b)


def _options(b, options: Options) -> int:
    """The options table, written through the generated ``<Table>Start/Add<Field>/End`` functions."""
    import tflite

    vectors = {name: _int_vector(b, value) for name, value in options.fields.items() if isinstance(value, tuple)}
    getattr(tflite, f"{options.table}Start")(b)
    for name, value in options.fields.items():
        getattr(tflite, f"{options.table}Add{name}")(b, vectors.get(name, value))
    return getattr(tflite, f"{options.table}End")(b)


def build(model: Model) -> bytes:
    """Serialize ``model`` as a .tflite flatbuffer (schema version 3, identifier "TFL3")."""
    import flatbuffers
    import tflite

    b = flatbuffers.Builder(1024)
    buffer_data = [b""] + [np.ascontiguousarray(t.data, t.dtype).astype(np.dtype(t.dtype).newbyteorder("<")).tobytes()
                           for t in model.tensors if t.data is not None]
    buffers = []
    for data in buffer_data:
        vector = b.CreateByteVector(data) if data else None
        tflite.BufferStart(b)
        if vector is not None:
            tflite.BufferAddData(b, vector)
        buffers.append(tflite.BufferEnd(b))
    tensors, next_buffer = [], 1
    for tensor in model.tensors:
        name, shape = b.CreateString(tensor.name), _int_vector(b, tensor.shape)
        quant = quantization_table(b, tensor.quantization) if tensor.quantization else None
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, getattr(tflite.TensorType, _TENSOR_TYPES[tensor.dtype]))
        tflite.TensorAddName(b, name)
        if tensor.data is not None:
            tflite.TensorAddBuffer(b, next_buffer)
            next_buffer += 1
        if quant is not None:
            tflite.TensorAddQuantization(b, quant)
        if tensor.variable:
            tflite.TensorAddIsVariable(b, True)
        tensors.append(tflite.TensorEnd(b))
    codes = sorted({op.code for op in model.operators}, key=lambda code: (code[0], code[1] or ""))
    operators = []
    for op in model.operators:
        inputs, outputs = _int_vector(b, op.inputs), _int_vector(b, op.outputs)
        options = _options(b, op.options) if op.options else None
        custom_options = b.CreateByteVector(op.custom_options) if op.custom_options is not None else None
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, codes.index(op.code))
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op.options.table))
            tflite.OperatorAddBuiltinOptions(b, options)
        if custom_options is not None:
            tflite.OperatorAddCustomOptions(b, custom_options)
        operators.append(tflite.OperatorEnd(b))
    tensor_vector, operator_vector = _offset_vector(b, tensors), _offset_vector(b, operators)
    inputs, outputs = _int_vector(b, model.inputs), _int_vector(b, model.outputs)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vector)
    tflite.SubGraphAddOperators(b, operator_vector)
    tflite.SubGraphAddInputs(b, inputs)
    tflite.SubGraphAddOutputs(b, outputs)
    subgraph = tflite.SubGraphEnd(b)
    versions = {op.code: op.version for op in model.operators}
    opcodes = []
    for builtin, custom_code in codes:
        code = getattr(tflite.BuiltinOperator, builtin)
        custom = b.CreateString(custom_code) if custom_code is not None else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddVersion(b, versions[builtin, custom_code])
        if custom is not None:
            tflite.OperatorCodeAddCustomCode(b, custom)
        opcodes.append(tflite.OperatorCodeEnd(b))
    vectors = [_offset_vector(b, items) for items in (opcodes, [subgraph], buffers)]
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, vectors[0])
    tflite.ModelAddSubgraphs(b, vectors[1])
    tflite.ModelAddBuffers(b, vectors[2])
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
