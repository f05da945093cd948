"""Import a TFLite or ONNX model with TVM's own frontends, keeping the model's layer names.

TVM's frontends drop the model's layer names. We keep them as data: a `tvm_ext.layers.LayerRecord` per
model operator, and per binding of `main` the records it implements (see tvm_ext.layers), which every pass
carries forward to the kernel calls.
"""

from __future__ import annotations

import functools
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tvm
from tvm import relax

from memory_planner.plan import QuantParams
from tvm_ext.layers import ONNX_QUANTIZATION_ATTR, ORIGINAL_VAR_NAMES_ATTR, LayerRecord, Layers, bindings_of, with_layers

from .tflite_ops.arg_max import convert_arg_max
from .tflite_ops.batch_matmul import convert_batch_matmul
from .tflite_ops.constants import dequantize_int64, with_array_dtypes
from .tflite_ops.dilated_convolution import DilatedConvolutions
from .tflite_ops.expand_dims import convert_expand_dims
from .tflite_ops.gelu import convert_gelu
from .tflite_ops.io_quantization import tflite_tensor_quant
from .tflite_ops.l2_normalization import convert_l2_normalization
from .tflite_ops.lstm import convert_unidirectional_sequence_lstm
from .tflite_ops.pack import convert_pack
from .tflite_ops.pad import convert_pad
from .tflite_ops.prelu import convert_prelu
from .tflite_ops.quantize import convert_quantize
from .tflite_ops.quantized import QUANTIZED_MODEL_ATTR, tflite_has_quantized_tensors
from .tflite_ops.refusal import OperatorRefused
from .tflite_ops.resize_nearest import convert_resize_nearest_neighbor
from .tflite_ops.signal import SIGNAL_CONVERTERS, convert_signal, custom_code
from .tflite_ops.softmax import convert_softmax
from .tflite_ops.strided_slice import convert_strided_slice
from .tflite_ops.svdf import convert_svdf
from .tflite_ops.tensor_names import tensor_name_table
from .tflite_ops.transpose_conv import convert_transpose_conv
from .tflite_ops.unpack import convert_unpack
from ..model_check.dilated_convolutions import CONVOLUTIONS, SIZE_ONE_RESHAPES, dilated_convolution_chains
from ..model_check.facts import ModelFormat
from ..model_check.parsed import ParsedModel, parse_model
from ..model_check.tflite_layers import tflite_layer_name
from packager.bundle_prefix import c_identifier

_LAYER_VAR_PREFIX = "layer"  # the name hint of each operator's result var (a name only: nothing reads it back)

_CONVOLUTIONS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"})  # their third input, the bias, may be omitted
# ONNX operators that make a model quantized (besides the QLinear ones): the int8 pass runs it as onnxruntime does.
_ONNX_QUANTIZED_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "QGemm"})


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output as the model file declares it: its quantization when it is an integer tensor
    the file quantizes (TFLite's tensor quantization, ONNX's from the nodes reading or writing it:
    onnx_ops.io_quantization), and its axis order when it is an image (`layout`: "NHWC" for TFLite's 4-D
    tensors, "NCHW" for ONNX's; "" unknown)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: QuantParams | None = None
    layout: str = ""


@dataclass(frozen=True)
class IoQuantization:
    """What a Relax module's types cannot say about its inputs and outputs (in main's order): their
    quantization (None: not quantized) and the axis order of its 4-D ones ("" unknown)."""

    inputs: tuple[QuantParams | None, ...]
    outputs: tuple[QuantParams | None, ...]
    layout: str = ""


@dataclass
class ImportedModel:
    """A model in Relax, with what the file says about it."""

    name: str  # C identifier derived from the file name
    path: Path
    format: str  # "tflite" or "onnx"
    mod: tvm.IRModule
    layers: list[LayerRecord]  # the model's operators that became Relax bindings, in model order
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    # Model output index -> the elements (a bool mask of its shape) TFLite Micro leaves unwritten on a first
    # invocation (signal operators: tflite_ops.signal.first_run_unwritten), where the bundle writes 0.
    first_run_unwritten: dict[int, np.ndarray] = field(default_factory=dict)


MODEL_LAYOUTS = {"tflite": "NHWC", "onnx": "NCHW"}  # the axis order of each format's 4-D (image) tensors


def image_layout(shape: tuple[int, ...], model_format: str) -> str:
    """The axis order of a model's input or output of `shape`: "NHWC" (TFLite) or "NCHW" (ONNX) when it has
    4 axes, else "" (no image layout)."""
    return MODEL_LAYOUTS.get(model_format, "") if len(shape) == 4 else ""


class ModelImportError(Exception):
    """The frontend could not import the model; the message names the model and the operator."""


def tflite_name(raw: bytes | None) -> str:
    """A TFLite name (flatbuffer bytes, any encoding) as text: UTF-8, with every byte that is not valid
    UTF-8 written `\\xNN` (lossless and visible). The one place TFLite names are decoded."""
    return (raw or b"").decode("utf-8", errors="backslashreplace")


def import_model(path: str | Path, name: str | None = None) -> ImportedModel:
    """Import a `.tflite` or `.onnx` file into Relax; raise ModelImportError naming what failed.

    `name` (default: the file name's stem) becomes the bundle's C prefix, made a C identifier. The file is not
    checked (`tvm_ext.model_check`): a bad one may fail anywhere.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".tflite", ".onnx"):
        return import_parsed(parse_model(path, path.read_bytes()), name)
    raise ModelImportError(f"{path.name}: unknown model format '{suffix}' (expected .tflite or .onnx)")


def import_parsed(parsed: ParsedModel, name: str | None = None) -> ImportedModel:
    """Import the model file `parsed` (parsed once, by `tvm_ext.model_check.parse_model`, for its check) into
    Relax; reads `parsed.root`, never changes it.

    `parsed.path` names the model in messages; `name` as for `import_model`.
    """
    importer = _import_tflite if parsed.format is ModelFormat.TFLITE else _import_onnx
    imported = importer(parsed.path, parsed.root)
    imported.name = c_identifier(name or parsed.path.stem)
    return imported


def from_relax(mod: tvm.IRModule, name: str = "model", io: IoQuantization | None = None) -> ImportedModel:
    """Wrap a Relax module a user built (BlockBuilder, a frontend, their own passes) as an imported model.

    `main` must take tensors of static shape and return a tensor or a tuple of tensors. Layer names come from
    `main`'s layer records when the module carries them (tvm_ext.layers), else calls are unnamed. `io` gives
    its inputs' and outputs' quantization and layout (tvm_ext.quantize's integer module has them).
    """
    main = mod["main"]

    def spec(var_name: str, ty, quant: QuantParams | None) -> TensorSpec:
        if not isinstance(ty, relax.TensorType) or ty.shape is None:
            raise ModelImportError(f"{name}: {var_name} is not a tensor of static shape")
        shape = tuple(int(d) for d in ty.shape.values)
        return TensorSpec(var_name, shape, str(ty.dtype), quant, io.layout if io and len(shape) == 4 else "")

    ret = main.ret_ty
    ret_fields = list(ret.fields) if isinstance(ret, relax.TupleType) else [ret]
    layers = list(Layers.of(main).records)
    # A module tvm_ext.pipeline lowered has generated names already: its inputs keep the names the user gave.
    given_names = main.attrs.get(ORIGINAL_VAR_NAMES_ATTR, {}) if main.attrs is not None else {}
    return ImportedModel(
        name=c_identifier(name),
        path=Path(f"{name}.relax"),
        format="relax",
        mod=mod,  # its vars are renamed by the pipeline's first pass (tvm_ext.lower.GeneratedVarNames)
        layers=layers,
        inputs=[spec(str(given_names.get(p.name, p.name)), p.ty, _nth(io and io.inputs, i))
                for i, p in enumerate(main.params)],
        outputs=[spec(f"output{i}", ty, _nth(io and io.outputs, i)) for i, ty in enumerate(ret_fields)],
    )


def _nth(quants: tuple[QuantParams | None, ...] | None, index: int) -> QuantParams | None:
    return quants[index] if quants and index < len(quants) else None


@relax.expr_functor.mutator
class _GeneratedVarNames(relax.PyExprMutator):
    """Renames every var of a function but the `kept` ones (our own operator results): parameters
    `input<i>`, the rest `v<n>`, in visiting order. TVM's frontends name vars after the model's tensors, and
    TVM's C code generator names kernel buffers and parameters after vars: after this, no model text can."""

    def __init__(self, mod: tvm.IRModule, params: list[relax.Var], kept: set[relax.Var]) -> None:
        super().__init__(mod)
        self.params = params
        self.kept = kept
        self.renamed = 0
        self.original_names: dict[str, str] = {}  # generated name -> the name it replaced

    def _rename(self, var: relax.Var, make) -> relax.Var:
        if var in self.kept:
            return var
        index = next((i for i, p in enumerate(self.params) if p.same_as(var)), None)
        name = f"input{index}" if index is not None else f"v{self.renamed}"
        self.renamed += index is None
        new = make(name, var.ty)
        self.original_names[name] = var.name
        self.set_var_remap(var, new)
        return new

    def visit_var_def_(self, var: relax.Var) -> relax.Var:
        return self._rename(var, relax.Var)

    def visit_dataflow_var_def_(self, var: relax.DataflowVar) -> relax.Var:
        return self._rename(var, relax.DataflowVar)


def with_generated_var_names(mod: tvm.IRModule, kept: frozenset[relax.Var] = frozenset()) -> tvm.IRModule:
    """`mod` with `main`'s vars but `kept` renamed by `_GeneratedVarNames` (its attributes kept: the renaming
    maps each binding to one binding in the same place, so the layer records stay valid). `main`'s attribute
    ORIGINAL_VAR_NAMES_ATTR maps each generated name to the model's own, for messages (never for C)."""
    main = mod["main"]
    renamer = _GeneratedVarNames(mod, list(main.params), set(kept))
    renamed_main = renamer.visit_expr(main)
    renamed = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)  # the caller's module stays as it was
    renamed["main"] = renamed_main.with_attr(ORIGINAL_VAR_NAMES_ATTR, renamer.original_names)
    return renamed


class _OperatorResults:
    """The records of a frontend's operators, and the var each operator's result is bound to."""

    def __init__(self) -> None:
        self.records: list[LayerRecord] = []
        self.result_vars: dict[relax.Var, int] = {}  # an operator's result var -> its record's position

    def bind(self, bb: relax.BlockBuilder, value: relax.Expr, record: LayerRecord) -> relax.Expr:
        """Bind an operator's result (a call: one tensor, or the tuple of SPLIT's pieces; or a tuple of calls,
        UNPACK's outputs) to vars of its own, each call to one, and record it; leave other values alone."""
        calls = list(value.fields) if isinstance(value, relax.Tuple) else [value]
        if not calls or not all(isinstance(call, relax.Call) for call in calls):
            return value
        normalized = [bb.normalize(call) for call in calls]
        if not all(isinstance(call.ty, (relax.TensorType, relax.TupleType)) for call in normalized):
            return value
        position = len(self.records)
        self.records.append(record)
        bound = [bb.emit(call, name_hint=f"{_LAYER_VAR_PREFIX}{position}") for call in normalized]
        self.result_vars.update(dict.fromkeys(bound, position))
        return relax.Tuple(bound) if isinstance(value, relax.Tuple) else bound[0]

    def attach(self, mod: tvm.IRModule) -> tvm.IRModule:
        """`mod` with main's bindings attributed to the records: an operator's result var is that operator;
        the frontend binds an operator's inner values before its result, so any other binding belongs to the
        next result var (the last one when none follows). Then main's other vars are renamed."""
        main = mod["main"]
        per_binding: list[list[int]] = []
        pending = 0
        last: list[int] = []
        for binding in bindings_of(main):
            if binding.var in self.result_vars:
                last = [self.result_vars[binding.var]]
                per_binding[len(per_binding) - pending:] = [last] * pending
                pending = 0
                per_binding.append(last)
            else:
                per_binding.append(last)
                pending += 1
        mod["main"] = with_layers(main, self.records, per_binding)
        return with_generated_var_names(mod, frozenset(self.result_vars))


def _import_tflite(path: Path, model) -> ImportedModel:
    """The TFLite file `path`'s `tflite.Model` table `model` in Relax."""
    from tvm.relax.frontend.tflite import tflite_frontend

    from tvm_ext.model_check.tflite_check import tflite_dtype_name
    from tvm_ext.model_check.tflite_reader import read_tflite

    results = _OperatorResults()
    graph = read_tflite(path.name, model, len(model._tab.Bytes)).subgraphs[0]  # checked: this reads it again
    unwritten: dict[int, np.ndarray] = {}  # tensor index -> first_run_unwritten's mask

    class LayerNamingConverter(tflite_frontend.OperatorConverter):
        """TVM's TFLite converter, binding each operator's result to a var of its own and recording it."""

        def __init__(self, model, subgraph, exp_tab, bb):
            exp_tab.new_const = with_array_dtypes(exp_tab.new_const)  # int64 biases of 16x8 operators
            super().__init__(model, subgraph, exp_tab, bb)
            self._flattened_inputs: dict[int, relax.Expr] = {}  # tensor index -> its FULLY_CONNECTED rows
            self.static_values: dict[int, np.ndarray] = {}  # tensor index -> the value a converter reads for it
            # Quantized operators TVM 0.27 does not convert: SVDF (its converter is float only and drops the state),
            # QUANTIZE to int32 (relax.quantize has no int32 output); TRANSPOSE_CONV's converter drops its
            # activation; BATCH_MATMUL's is float only; EXPAND_DIMS, PACK and UNPACK (TVM's converters fail on any
            # model, UNPACK on any of several outputs); ARG_MAX and L2_NORMALIZATION (no QDQ form); PRELU (TVM's
            # applies to the raw int8 values); PAD and PADV2 (TVM's refuses an input quantized unlike the output,
            # which TFLite Micro pads as it is); SOFTMAX (TVM's drops beta); STRIDED_SLICE (ours refuses the options
            # TFLite Micro does not implement);
            # ARG_MIN as ARG_MAX; RESIZE_NEAREST_NEIGHBOR (no QDQ form, nor a coordinate mode for align_corners with
            # half_pixel_centers); UNIDIRECTIONAL_SEQUENCE_LSTM (TVM's is float only and makes the state a constant);
            # TFLite Micro's signal-library custom operators (TVM has none; named by their custom code, see
            # get_op_code_str).
            tvm_gelu = self.convert_map["GELU"]
            own = {"SVDF": lambda op: convert_svdf(self, op), "EXPAND_DIMS": lambda op: convert_expand_dims(self, op),
                   "PACK": lambda op: convert_pack(self, op), "UNPACK": lambda op: convert_unpack(self, op),
                   "QUANTIZE": functools.partial(convert_quantize, self, tvm_convert=self.convert_map["QUANTIZE"]),
                   "BATCH_MATMUL": functools.partial(convert_batch_matmul, self,
                                                     tvm_convert=self.convert_map["BATCH_MATMUL"]),
                   "TRANSPOSE_CONV": functools.partial(convert_transpose_conv, self,
                                                       tvm_convert=self.convert_map["TRANSPOSE_CONV"]),
                   "ARG_MAX": functools.partial(convert_arg_max, self, tvm_convert=self.convert_map["ARG_MAX"]),
                   "ARG_MIN": functools.partial(convert_arg_max, self, tvm_convert=self.convert_map["ARG_MIN"],
                                                largest=False),
                   "L2_NORMALIZATION": functools.partial(convert_l2_normalization, self,
                                                         tvm_convert=self.convert_map["L2_NORMALIZATION"]),
                   "PRELU": functools.partial(convert_prelu, self, tvm_convert=self.convert_map["PRELU"]),
                   "SOFTMAX": functools.partial(convert_softmax, self, tvm_convert=self.convert_map["SOFTMAX"]),
                   "STRIDED_SLICE": functools.partial(convert_strided_slice, self,
                                                      tvm_convert=self.convert_map["STRIDED_SLICE"]),
                   "PAD": functools.partial(convert_pad, self, tvm_convert=self.convert_map["PAD"]),
                   "PADV2": functools.partial(convert_pad, self, tvm_convert=self.convert_map["PADV2"]),
                   "RESIZE_NEAREST_NEIGHBOR": functools.partial(
                       convert_resize_nearest_neighbor, self,
                       tvm_convert=self.convert_map["RESIZE_NEAREST_NEIGHBOR"]),
                   "UNIDIRECTIONAL_SEQUENCE_LSTM": functools.partial(convert_unidirectional_sequence_lstm, self),
                   **{code: functools.partial(convert_signal, self, unwritten=unwritten) for code in SIGNAL_CONVERTERS}}
            # Where each operator's table starts in the flatbuffer -> its operator index.
            self.operator_index = {subgraph.Operators(i)._tab.Pos: i for i in range(subgraph.OperatorsLength())}
            # TensorFlow's form of a dilated convolution: its operators are ours (the others their converter's).
            op_names = [self.get_op_code_str(subgraph.Operators(i)) for i in range(subgraph.OperatorsLength())]
            dilated = DilatedConvolutions(dilated_convolution_chains(graph, op_names))
            converters = {**self.convert_map, **own}
            for op in ("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", *CONVOLUTIONS, *SIZE_ONE_RESHAPES):
                converters[op] = dilated.wrap(self, converters[op])
            self.convert_map = {op: self._named(fn) for op, fn in converters.items()}
            # Data movement TVM 0.27 refuses when quantized, though its converters apply the same op to the int8
            # tensor itself, exactly (tvm_ext/transform/int8/data_movement.py lowers them).
            data_movement = {"DEPTH_TO_SPACE", "PAD", "PADV2", "SLICE", "SPACE_TO_DEPTH", "SPLIT", "SPLIT_V", "SQUEEZE",
                             "STRIDED_SLICE", "TRANSPOSE"}
            self._SUPPORTED_QUANTIZED_OPS = (frozenset(self._SUPPORTED_QUANTIZED_OPS) | own.keys() | data_movement
                                             | {"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"})
            # GELU: TVM's drops the approximate option (float only: a quantized GELU stays TVM's refusal).
            self.convert_map["GELU"] = self._named(functools.partial(convert_gelu, self, tvm_convert=tvm_gelu))

        def _named(self, convert):
            def convert_and_name(op):
                output = self.get_output_tensors(op)[0]
                index = self.operator_index[op._tab.Pos]
                # TFLite joins the names of fused graph ops with ';': the first is the layer's own. An operator
                # whose output has no name is named by its index, as the model check names it.
                name = tflite_layer_name(tflite_name(output.tensor.Name()).split(";")[0], index)
                record = LayerRecord(name, self.get_op_code_str(op), index)
                try:
                    result = convert(op=op)
                    return None if result is None else results.bind(self.bb, result, record)
                except Exception as err:  # noqa: BLE001 - a conversion or type failure is this operator's
                    raise ModelImportError(f"{path.name}: layer {record.label}: {_import_failure(err)}") from err

            return convert_and_name

        def get_op_code_str(self, op):
            """TVM's operator name, or a signal-library custom operator's code (e.g. "SignalWindow")."""
            code = custom_code(self, op)
            return code if code in SIGNAL_CONVERTERS else super().get_op_code_str(op)

        def get_tensors(self, tensors_idx_list):
            """TVM's tensor wrappers, with the quantized axis set to 0 where the file's cannot matter: a 1-D
            tensor has only that axis (the converter writes the weights' dimension, 3, on depthwise biases:
            TFLite Micro ignores it, `relax.dequantize` refuses it) and one scale applies to every axis
            (TVM refuses a per-tensor depthwise kernel on dimension 3)."""
            wrappers = super().get_tensors(tensors_idx_list)
            for wrapper in wrappers:
                if wrapper.qnn_params and (wrapper.tensor.ShapeLength() == 1
                                           or wrapper.tensor.Quantization().ScaleLength() == 1):
                    wrapper.qnn_params["axis"] = 0
            return wrappers

        def get_input_tensors(self, op):
            """TVM's input wrappers, without a convolution's omitted bias (index -1, which TFLite Micro runs as
            no bias on a CONV_2D): TVM's convolution converter reads any third input as a bias tensor."""
            wrappers = super().get_input_tensors(op)
            if len(wrappers) == 3 and wrappers[2].tensor_idx < 0 and self.get_op_code_str(op) in _CONVOLUTIONS:
                return wrappers[:2]
            return wrappers

        def convert_conv(self, op, conv_type):
            """TVM's convolution, but a DEPTHWISE_CONV_2D without a bias is refused: TFLite Micro's kernel
            crashes on it, so nothing could check our bundle."""
            if conv_type == "depthwise" and len(self.get_input_tensors(op)) == 2:
                raise OperatorRefused("DEPTHWISE_CONV_2D without a bias (TFLite Micro cannot run it)")
            return super().convert_conv(op, conv_type)

        def dequantize(self, expr, tensor):
            """TVM's dequantize, but of an int64 tensor (a 16x8 operator's bias), which relax.dequantize refuses."""
            if isinstance(expr.ty, relax.TensorType) and expr.ty.dtype == "int64" and tensor.qnn_params:
                return dequantize_int64(expr, tensor.qnn_params["scale"])
            return super().dequantize(expr, tensor)

        def convert_fully_connected(self, op):
            """FULLY_CONNECTED as TFLite runs it, on an input of any rank read as rows of the weights' input
            units: without keep_num_dims the output is [rows, units]; with it, the input's shape with its
            last dimension made `units`. (TVM's converter multiplies a higher-rank input as it is, which
            our int8 lowering and TFLite's flattening disagree with.)"""
            from tflite.FullyConnectedOptions import FullyConnectedOptions

            data, weight = self.get_input_tensors(op)[:2]
            units, input_units = (int(d) for d in self.get_tensor_shape(weight))
            data_shape = [int(d) for d in self.get_tensor_shape(data)]
            if len(data_shape) == 2 or input_units == 0:
                return super().convert_fully_connected(op)
            elements = int(np.prod(data_shape))
            if elements % input_units:
                raise ModelImportError(f"{path.name}: FULLY_CONNECTED input {data_shape} does not split into "
                                       f"rows of {input_units} (the weights' input units)")
            rows = self.bb.normalize(relax.op.reshape(self.get_tensor_expr(data), (elements // input_units,
                                                                                   input_units)))
            self._flattened_inputs[data.tensor_idx] = rows
            try:
                out = super().convert_fully_connected(op)
            finally:
                del self._flattened_inputs[data.tensor_idx]
            options = FullyConnectedOptions()
            options.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
            return relax.op.reshape(out, data_shape[:-1] + [units]) if options.KeepNumDims() else out

        def get_tensor_value(self, tensor_wrapper, is_sparse=False):
            """The tensor's constant value, or the one our converter gives a tensor TFLite Micro never reads
            (``static_values``: a TRANSPOSE_CONV's output_shape fed as a graph input)."""
            if tensor_wrapper.tensor_idx in self.static_values:
                return self.static_values[tensor_wrapper.tensor_idx]
            return super().get_tensor_value(tensor_wrapper, is_sparse)

        def get_tensor_expr(self, tensor, is_sparse=False):
            """The tensor's expression, or its flattened form while a FULLY_CONNECTED is converted."""
            flattened = self._flattened_inputs.get(tensor.tensor_idx)
            if flattened is not None:
                return flattened
            return super().get_tensor_expr(tensor, is_sparse)

    strict_tensor_name = tflite_frontend.get_tensor_name
    # TVM's converter decodes tensor names as strict UTF-8 and fails on any other byte, and keys its tensors by
    # name: ours never fails, and names each tensor of the (one) subgraph apart from the others.
    tensor_names = tensor_name_table(model.Subgraphs(0), tflite_name)
    tflite_frontend.get_tensor_name = lambda graph, index: tensor_names[index]
    try:
        mod = tflite_frontend.from_tflite(model, op_converter=LayerNamingConverter)
    except tvm.error.OpError as err:  # TVM's errors for operators a model gets wrong or TVM lacks
        raise ModelImportError(f"{path.name}: {_first_line(err)}") from err
    finally:
        tflite_frontend.get_tensor_name = strict_tensor_name
    mod = results.attach(mod)
    subgraph = model.Subgraphs(0)
    if tflite_has_quantized_tensors(subgraph, tflite_dtype_name):
        mod["main"] = mod["main"].with_attr(QUANTIZED_MODEL_ATTR, True)

    def spec(index: int) -> TensorSpec:
        tensor = subgraph.Tensors(index)
        shape, dtype = tuple(int(d) for d in tensor.ShapeAsNumpy()), tflite_dtype_name(tensor.Type())
        return TensorSpec(tflite_name(tensor.Name()), shape, dtype, tflite_tensor_quant(tensor, dtype),
                          image_layout(shape, "tflite"))

    return ImportedModel(
        name=path.stem,
        path=path,
        format="tflite",
        mod=mod,
        layers=results.records,
        inputs=[spec(i) for i in subgraph.InputsAsNumpy()],
        outputs=[spec(i) for i in subgraph.OutputsAsNumpy()],
        first_run_unwritten={k: unwritten[int(i)] for k, i in enumerate(subgraph.OutputsAsNumpy()) if i in unwritten},
    )


def _import_onnx(path: Path, model) -> ImportedModel:
    """The ONNX file `path`'s `onnx.ModelProto` `model` in Relax (rewritten on copies: `model` stays as it is)."""
    import onnx
    from onnx import helper
    from tvm.relax.frontend.onnx import onnx_frontend

    from tvm_ext.frontend.onnx_ops.clip import constant_clip
    from tvm_ext.frontend.onnx_ops.conv_transpose import output_shape_as_pads
    from tvm_ext.model_check.onnx_fold_shapes import fold_shape_arithmetic
    from tvm_ext.frontend.onnx_ops.resize import onnxruntime_bilinear, resize_as_tvm_converts
    from tvm_ext.frontend.onnx_ops.integer_ops import CONVERTERS as ONNX_CONVERTERS
    from tvm_ext.frontend.onnx_ops.io_quantization import onnx_io_quant
    from tvm_ext.frontend.onnx_ops.identity_elimination import without_identities
    from tvm_ext.frontend.onnx_ops.qdq_fusion import fuse_qdq

    results = _OperatorResults()

    class LayerNamingImporter(onnx_frontend.ONNXGraphImporter):
        """TVM's ONNX importer, binding each node's result to a var of its own and recording it."""

        nodes_seen = 0  # the importer parses each node (and nothing else of type NodeProto) once, in order

        def _parse_value_proto(self, value_proto):
            if isinstance(value_proto, onnx.NodeProto):
                self.node_index = self.nodes_seen
                self.nodes_seen += 1
            return super()._parse_value_proto(value_proto)

        def _check_for_unsupported_ops(self, graph):
            """TVM's check, for the nodes our converters leave to TVM."""
            theirs = onnx.GraphProto()
            theirs.node.extend(node for node in graph.node if node.op_type not in ONNX_CONVERTERS)
            super()._check_for_unsupported_ops(theirs)

        def _convert_operator(self, op_name, inputs, attrs, opset):
            record = LayerRecord(attrs.get("tvm_custom", {}).get("name") or "", op_name, self.node_index)
            try:
                if op_name == "ConvTranspose" and "output_shape" in attrs:
                    data_shape, weight_shape = (_static_dims(x) for x in inputs[:2])
                    attrs = output_shape_as_pads(attrs, data_shape[2:], weight_shape[2:])
                if op_name == "Resize" and (bilinear := onnxruntime_bilinear(self.bb, inputs, attrs)) is not None:
                    return results.bind(self.bb, bilinear, record)
                if op_name == "Resize":
                    inputs, attrs = resize_as_tvm_converts(inputs, attrs)
                if op_name in ONNX_CONVERTERS:
                    result = ONNX_CONVERTERS[op_name](self.bb, inputs, attrs)
                elif op_name == "Clip" and (clip := constant_clip(inputs, attrs, opset)) is not None:
                    result = clip
                else:
                    result = super()._convert_operator(op_name, inputs, attrs, opset)
                return results.bind(self.bb, result, record)
            except Exception as err:  # noqa: BLE001 - a conversion or type failure is this node's
                raise ModelImportError(f"{path.name}: node {record.label}: {_import_failure(err)}") from err

    model = without_identities(model)  # as onnxruntime, before any node pattern is matched
    model = fold_shape_arithmetic(model)  # sizes computed from static shapes, as constants
    # As the file quantizes them, before onnxruntime's QDQ groups become the QLinear operators it runs.
    quant_of = onnx_io_quant(model.graph)
    model = fuse_qdq(model)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]

    def spec(value_info, quant: QuantParams | None) -> TensorSpec:
        tensor_type = value_info.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in tensor_type.shape.dim)
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)).name
        return TensorSpec(value_info.name, dims, dtype, quant, image_layout(dims, "onnx"))

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    importer = LayerNamingImporter({}, "float32", keep_params_in_input=False, sanitize=True)
    try:
        with warnings.catch_warnings():
            # The importer warns for each input it renames to a valid identifier; the plan keeps the model's names.
            warnings.simplefilter("ignore", UserWarning)
            mod = importer.from_onnx(model.graph, opset)
    except tvm.error.OpError as err:  # TVM's errors for operators a model gets wrong or TVM lacks
        raise ModelImportError(f"{path.name}: {_first_line(err)}") from err
    mod = results.attach(mod)
    if any(node.op_type in _ONNX_QUANTIZED_OPS or node.op_type.startswith("QLinear") for node in model.graph.node):
        mod["main"] = mod["main"].with_attr(ONNX_QUANTIZATION_ATTR, True)
    return ImportedModel(
        name=path.stem,
        path=path,
        format="onnx",
        mod=mod,
        layers=results.records,
        inputs=[spec(i, quant_of.inputs.get(i.name)) for i in graph_inputs],
        outputs=[spec(o, quant_of.outputs.get(o.name)) for o in model.graph.output],
    )


def _static_dims(value: relax.Expr) -> list[int]:
    """The static shape of a Relax tensor value (the model check made every shape static)."""
    return [int(d) for d in value.ty.shape.values]


def _import_failure(err: Exception) -> str:
    """One line on why TVM could not import an operator: its message, else where it failed; or why our converter
    refused it (OperatorRefused: the model's fault, its message alone)."""
    if isinstance(err, OperatorRefused):
        return str(err)
    if str(err).strip():
        return f"TVM cannot import it: {_first_line(err)}"
    failed_at = traceback.extract_tb(err.__traceback__)[-1]
    return (f"TVM cannot import it ({type(err).__name__} at {Path(failed_at.filename).name}:"
            f"{failed_at.lineno}: {failed_at.line})")


def _first_line(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__
