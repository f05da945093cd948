"""Which operators our compiler accepts, as tables that are easy to extend.

An operator is supported when TVM 0.27's frontend converts it AND our pipeline can build it:
- float operators: every operator TVM's frontend converts, except the few in `*_EXCLUDED` (operators that
  cannot become a static, stateless C kernel over one arena: control flow, state, randomness,
  data-dependent output shapes, frontend markers);
- quantized TFLite operators (any int8/uint8/int16 tensor with quantization parameters): only
  `TFLITE_INT8_OPS`, the integer kernel set of our int8 pipeline; those whose first input and first output
  are int16 (16x8: int16 activations, int8 weights) only `TFLITE_16X8_OPS`. Each is bit-exact with TFLite
  Micro, whose registrations and kernel types (`TFLM_*`) say why a quantized operator is refused: TFLite Micro
  has no kernel for it, or our pipeline has none yet (`TFLITE_INT8_REFUSALS` says why where there is more).

Why TVM's converter lists are read lazily rather than copied here: they are the ground truth of what the
import step can do, they change with TVM, and a copy would silently drift. Reading them costs one
`import tvm` (about 1.5 s) the first time a model's operators are checked, never at package import; the
earlier checks (file, structure, shapes, buffers, graph) run without TVM, so a broken file is refused
before TVM loads. What is ours (the int8 set, the exclusions) is data in this file.
"""

from __future__ import annotations

import functools

from .signal_ops import SIGNAL_OPERATORS

TFLITE_INT8_OPS: frozenset[str] = frozenset(
    {
        "ABS",
        "ADD",
        "ARG_MAX",
        "ARG_MIN",
        "AVERAGE_POOL_2D",
        "BATCH_MATMUL",
        "CONCATENATION",
        "CONV_2D",
        "DEPTH_TO_SPACE",
        "DEPTHWISE_CONV_2D",
        "DEQUANTIZE",
        "DIV",
        "EXPAND_DIMS",
        "FULLY_CONNECTED",
        "HARD_SWISH",
        "L2_NORMALIZATION",
        "LEAKY_RELU",
        "LOGISTIC",
        "MAX_POOL_2D",
        "MAXIMUM",
        "MEAN",
        "MINIMUM",
        "MUL",
        "PACK",
        "PAD",
        "PADV2",
        "PRELU",
        "QUANTIZE",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "RELU",
        "RELU6",
        "RESHAPE",
        "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR",
        "RSQRT",
        "SLICE",
        "SOFTMAX",
        "SPACE_TO_DEPTH",
        "SPLIT",
        "SPLIT_V",
        "SQUARED_DIFFERENCE",
        "SQUEEZE",
        "STRIDED_SLICE",
        "SUB",
        "SUM",
        "SVDF",
        "TANH",
        "TRANSPOSE",
        "TRANSPOSE_CONV",
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "UNPACK",
    }
)

# The 16x8 variants (int16 activations, int8 weights) bit-exact with TFLite Micro.
TFLITE_16X8_OPS: frozenset[str] = frozenset(
    {
        "ABS",
        "ADD",
        "AVERAGE_POOL_2D",
        "BATCH_MATMUL",
        "CONCATENATION",
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "DEQUANTIZE",  # of an int16 tensor: its output is float, so the check never counts it as 16x8
        "EXPAND_DIMS",
        "FULLY_CONNECTED",
        "LEAKY_RELU",
        "LOGISTIC",
        "MAX_POOL_2D",
        "MAXIMUM",
        "MEAN",
        "MINIMUM",
        "MUL",
        "PACK",
        "PAD",
        "PADV2",
        "QUANTIZE",
        "RELU",
        "RELU6",
        "RESHAPE",
        "RSQRT",
        "SLICE",
        "SOFTMAX",
        "SPLIT",
        "SPLIT_V",
        "SQUARED_DIFFERENCE",
        "SQUEEZE",
        "STRIDED_SLICE",
        "SUB",
        "SUM",
        "TANH",
        "TRANSPOSE",
        "TRANSPOSE_CONV",
        "UNPACK",
    }
)

# TFLite Micro's builtin operators: the registrations of its Python interpreter (python_ops_resolver.cc, which took
# over all_ops_resolver.cc's list), the reference our quantized kernels are bit-exact with. Its custom operators
# (the audio signal library, TFLite_Detection_PostProcess, ETHOSU, CIRCULAR_BUFFER, DECODE) are not listed here.
# README's operator table has a row for each (scripts/tflite_operator_table.py prints it from these tables).
TFLM_BUILTINS: frozenset[str] = frozenset(
    """
    ABS ADD ADD_N ARG_MAX ARG_MIN ASSIGN_VARIABLE AVERAGE_POOL_2D BATCH_MATMUL BATCH_TO_SPACE_ND BROADCAST_ARGS
    BROADCAST_TO CALL_ONCE CAST CEIL CONCATENATION CONV_2D COS CUMSUM DEPTH_TO_SPACE DEPTHWISE_CONV_2D DEQUANTIZE DIV
    DYNAMIC_UPDATE_SLICE ELU EMBEDDING_LOOKUP EQUAL EXP EXPAND_DIMS FILL FLOOR FLOOR_DIV FLOOR_MOD FULLY_CONNECTED
    GATHER GATHER_ND GREATER GREATER_EQUAL HARD_SWISH IF L2_NORMALIZATION L2_POOL_2D LEAKY_RELU LESS LESS_EQUAL LOG
    LOG_SOFTMAX LOGICAL_AND LOGICAL_NOT LOGICAL_OR LOGISTIC MAX_POOL_2D MAXIMUM MEAN MINIMUM MIRROR_PAD MUL NEG
    NOT_EQUAL PACK PAD PADV2 PRELU QUANTIZE READ_VARIABLE REDUCE_ALL REDUCE_MAX REDUCE_MIN RELU RELU6 RESHAPE
    RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR REVERSE_V2 ROUND RSQRT SELECT_V2 SHAPE SIN SLICE SOFTMAX SPACE_TO_BATCH_ND
    SPACE_TO_DEPTH SPLIT SPLIT_V SQRT SQUARE SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB SUM SVDF TANH TRANSPOSE
    TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM UNPACK VAR_HANDLE WHILE ZEROS_LIKE
    """.split()
)

# TFLite Micro's builtins whose kernels take no int8 tensor (float, int32 or bool only; its int8 NEG is a TODO,
# its SQRT, LOG and EXP are float only): a quantized one has no reference to be bit-exact with.
TFLM_NO_INT8: frozenset[str] = frozenset(
    """
    BROADCAST_ARGS CEIL COS EXP FLOOR FLOOR_DIV FLOOR_MOD L2_POOL_2D LOG LOGICAL_AND LOGICAL_NOT LOGICAL_OR NEG
    REDUCE_ALL ROUND SIN SQRT SQUARE
    """.split()
)

# TFLite Micro's builtins with an int16 kernel (RSQRT's since its Prepare took int16 inputs: the tflite-micro
# package 0.dev20261023 runs it; earlier ones refused int16 although their Eval had a branch).
TFLM_INT16: frozenset[str] = frozenset(
    """
    ABS ADD AVERAGE_POOL_2D BATCH_MATMUL CAST CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEQUANTIZE DYNAMIC_UPDATE_SLICE
    EXPAND_DIMS FILL FULLY_CONNECTED GREATER LEAKY_RELU LOGISTIC MAX_POOL_2D MAXIMUM MEAN MINIMUM MUL PACK PAD PADV2
    PRELU QUANTIZE RELU RELU6 RESHAPE RESIZE_NEAREST_NEIGHBOR REVERSE_V2 RSQRT SELECT_V2 SLICE SOFTMAX SPLIT SPLIT_V
    SQUARED_DIFFERENCE SQUEEZE STRIDED_SLICE SUB SUM SVDF TANH TRANSPOSE TRANSPOSE_CONV UNIDIRECTIONAL_SEQUENCE_LSTM
    UNPACK
    """.split()
)

_BOOL = "bool tensors: no int8 kernel in our pipeline"
_RUNTIME_INDICES = "indices read at run time: no int8 kernel in our pipeline"
# SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND, which TVM 0.27 imports as opaque packed calls (float too): taken only
# framing a convolution (`dilated_convolutions`: the model check accepts those), whatever the type.
DILATION_FRAMES = frozenset({"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"})
DILATION_ONLY = ("only as TensorFlow's form of a dilated convolution: SPACE_TO_BATCH_ND, then CONV_2D or "
                 "DEPTHWISE_CONV_2D, then BATCH_TO_SPACE_ND, each read by the next alone")

# Why a TFLite Micro int8 registration has no int8 kernel in our pipeline, where there is more to say than that.
TFLITE_INT8_REFUSALS: dict[str, str] = {
    "EMBEDDING_LOOKUP": _RUNTIME_INDICES,
    "GATHER": _RUNTIME_INDICES,
    "GATHER_ND": _RUNTIME_INDICES,
    "EQUAL": _BOOL,
    "NOT_EQUAL": _BOOL,
    "GREATER": _BOOL,
    "GREATER_EQUAL": _BOOL,
    "LESS": _BOOL,
    "LESS_EQUAL": _BOOL,
    "SELECT_V2": _BOOL,
}

# Operators with state whose stateful conversion is ours and integer only (tvm_ext/frontend/tflite_ops/svdf.py, lstm.py):
# TVM 0.27's float converters would make the state a constant, and a bundle that forgets it between runs.
TFLITE_STATEFUL_INT8_ONLY: frozenset[str] = frozenset({"SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"})

_CONTROL_FLOW = "control flow (needs several subgraphs)"
_STATE = "keeps state between inferences"
_RANDOM = "random numbers"
_DATA_DEPENDENT = "data-dependent output shape (no static arena)"
_MARKER = "a converter marker, not a tensor operator"

TFLITE_EXCLUDED: dict[str, str] = {
    "CALL": _CONTROL_FLOW,
    "CALL_ONCE": _CONTROL_FLOW,
    "IF": _CONTROL_FLOW,
    "WHILE": _CONTROL_FLOW,
    "VAR_HANDLE": _STATE,
    "READ_VARIABLE": _STATE,
    "ASSIGN_VARIABLE": _STATE,
    "HASHTABLE": _STATE,
    "HASHTABLE_FIND": _STATE,
    "HASHTABLE_IMPORT": _STATE,
    "HASHTABLE_SIZE": _STATE,
    "RANDOM_STANDARD_NORMAL": _RANDOM,
    "RANDOM_UNIFORM": _RANDOM,
    "MULTINOMIAL": _RANDOM,
    "UNIQUE": _DATA_DEPENDENT,
    "NON_MAX_SUPPRESSION_V4": _DATA_DEPENDENT,
    "NON_MAX_SUPPRESSION_V5": _DATA_DEPENDENT,
    "DELEGATE": _MARKER,
    "PLACEHOLDER_FOR_GREATER_OP_CODES": _MARKER,
}

ONNX_EXCLUDED: dict[str, str] = {
    "If": _CONTROL_FLOW,
    "Loop": _CONTROL_FLOW,
    "Scan": _CONTROL_FLOW,
    "Optional": "optional values",
    "OptionalHasElement": "optional values",
    "OptionalGetElement": "optional values",
    "SequenceAt": "sequence values",
    "SequenceConstruct": "sequence values",
    "SequenceEmpty": "sequence values",
    "SequenceErase": "sequence values",
    "SequenceInsert": "sequence values",
    "SequenceLength": "sequence values",
    "ConcatFromSequence": "sequence values",
    "SplitToSequence": "sequence values",
    "NonZero": _DATA_DEPENDENT,
    "Unique": _DATA_DEPENDENT,
    "Compress": _DATA_DEPENDENT,
    "NonMaxSuppression": _DATA_DEPENDENT,
    "AllClassNMS": _DATA_DEPENDENT,
}

# ONNX operator domains whose op_types TVM's ONNX frontend looks up in its convert map.
ONNX_DOMAINS: frozenset[str] = frozenset({"", "ai.onnx", "com.microsoft"})

# ONNX op_types our importer converts where TVM's frontend has no converter or a wrong one: the one list of them,
# which keys the frontend's table of their converters (tvm_ext.frontend.onnx_ops.integer_ops.CONVERTERS, through
# tvm_ext.frontend.converter_table). Named here: the checks come before the frontend and import nothing of it.
ONNX_OWN_CONVERTERS: frozenset[str] = frozenset({
    "ConvInteger", "GRU", "LSTM", "QGemm", "QLinearAdd", "QLinearAveragePool", "QLinearConcat", "QLinearConv",
    "QLinearGlobalAveragePool", "QLinearLeakyRelu", "QLinearMatMul", "QLinearMul", "QLinearSoftmax", "RNN",
})

# TFLite custom operator codes the compiler knows, by the operator name it gives them: TVM's frontend's converter
# name, or our own converters' (TFLite Micro's signal library: tvm_ext/frontend/tflite_ops/signal.py).
TFLITE_CUSTOM_CODES: dict[str, str] = {"TFLite_Detection_PostProcess": "DETECTION_POSTPROCESS",
                                       **{code: code for code in SIGNAL_OPERATORS}}


@functools.cache
def tvm_tflite_ops() -> frozenset[str]:
    """Builtin operator names TVM 0.27's TFLite frontend has a converter for (imports TVM)."""
    from tvm.relax.frontend.tflite.tflite_frontend import OperatorConverter

    # The convert map is built in the constructor from bound methods; it reads none of its arguments.
    return frozenset(OperatorConverter(None, None, None, None).convert_map)


@functools.cache
def tvm_onnx_ops() -> frozenset[str]:
    """ONNX op_types TVM 0.27's ONNX frontend converts, or our importer converts for it (imports TVM)."""
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    return frozenset(_get_convert_map()) | ONNX_OWN_CONVERTERS


def tflite_refusal(op: str, quantized: bool, int16_activations: bool = False) -> str | None:
    """Why our compiler refuses TFLite operator `op` (builtin name), or None when it is supported.

    `quantized` says whether the operator reads or writes a quantized tensor; `int16_activations` whether its
    first input and first output are int16 (a 16x8 operator).
    """
    if op in TFLITE_EXCLUDED:
        return TFLITE_EXCLUDED[op]
    if op in SIGNAL_OPERATORS:
        return None  # TFLite Micro's signal library: its kernels are ours, for every type it runs
    if op in TFLITE_STATEFUL_INT8_ONLY and not quantized:
        return f"{_STATE}: only its integer form has a stateful kernel in our pipeline"
    if op not in tvm_tflite_ops():
        return "no converter in TVM 0.27"
    if op in DILATION_FRAMES and not int16_activations:
        return DILATION_ONLY
    if quantized and op not in TFLM_BUILTINS:
        return "TFLite Micro registers no kernel for it (no reference to be bit-exact with)"
    if quantized and int16_activations and op not in TFLITE_16X8_OPS:
        if op not in TFLM_INT16:
            return "TFLite Micro has no int16 kernel for it"
        return "no 16x8 (int16-activation) kernel in our pipeline"
    if quantized and op not in TFLITE_INT8_OPS:
        if op in TFLM_NO_INT8:
            return "TFLite Micro has no int8 kernel for it"
        return TFLITE_INT8_REFUSALS.get(op, "no int8 kernel in our pipeline")
    return None


def onnx_refusal(domain: str, op_type: str) -> str | None:
    """Why our compiler refuses ONNX operator `op_type` of `domain`, or None when it is supported."""
    if domain not in ONNX_DOMAINS:
        return f"operator domain '{domain}' is not converted by TVM 0.27"
    if op_type in ONNX_EXCLUDED:
        return ONNX_EXCLUDED[op_type]
    if op_type not in tvm_onnx_ops():
        return "no converter in TVM 0.27"
    return None
