"""Data types and sizes end in a bundle whose self-test passes, or in one line and exit code 2 naming the tensor;
never an internal error (exit 3), never a crash.

Each model is built here (onnx.helper, or the TFLite flatbuffer builder of fuzz_corpus) and compiled through the
command line. Integer types: every one onnxruntime can run Add on, with a constant at the type's extremes (the
literals C99 needs for them). bool: a model input and output. float16: refused unless only DEQUANTIZE reads it
(TVM then imports float32). Quantization scales, requantization multipliers and tensor sizes: refused in the
model check, before TVM computes anything.
"""

from __future__ import annotations

from pathlib import Path

import fuzz_corpus
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_cli_errors import assert_refused_in_one_line

from conftest import CliRun, run_cli
from tvm_ext.model_check import ErrorKind, ModelError, check_model

INTEGER_TYPES = ["int8", "uint8", "int16", "uint16", "int64", "uint32", "uint64"]


def onnx_model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", fuzz_corpus.ONNX_OPSET)])


def tensor(name: str, dtype: str, shape: tuple[int, ...] = (1, 4)) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)


def add_constant_model(dtype: str) -> onnx.ModelProto:
    """y = x + c, c holding the type's extremes: its minimum (signed types) and its maximum less 10, which
    the test inputs (0..9 for types wider than a byte) do not overflow."""
    values = np.array([1, 2, 3, 0.5], dtype=dtype)
    if values.dtype.kind in "iu":
        info = np.iinfo(values.dtype)
        values[0], values[3] = info.min, info.max - 10
    constant = numpy_helper.from_array(values.reshape(1, 4), "c")
    node = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    return onnx_model([node], [tensor("x", dtype)], [tensor("y", dtype)], [constant])


def write(tmp_path: Path, name: str, model) -> Path:
    path = tmp_path / name
    path.write_bytes(model.SerializeToString() if isinstance(model, onnx.ModelProto) else model)
    return path


def assert_compiles_and_passes(cli: CliRun, model: Path) -> None:
    """`cli` (conftest's `cli_in_process`) compiles `model`, and its self-test passes."""
    out = model.parent / "out"
    proc = cli(str(model), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "self-test PASS" in proc.stdout.splitlines()[-1], proc.stdout


def assert_refused_naming(model: Path, *words: str) -> str:
    line = assert_refused_in_one_line(run_cli(str(model), "-o", str(model.parent / "out")), model.name,
                                      model.parent / "out")
    for word in words:
        assert word in line, line
    return line


@pytest.mark.parametrize("dtype", [*INTEGER_TYPES, "float64"])
def test_onnx_add_of_each_type_compiles_and_matches_onnxruntime(dtype: str, tmp_path: Path, cli_in_process) -> None:
    assert_compiles_and_passes(cli_in_process, write(tmp_path, f"add_{dtype}.onnx", add_constant_model(dtype)))


def test_bool_input_and_output_compile_and_match_onnxruntime(tmp_path: Path, cli_in_process) -> None:
    """x > 0 -> bool output; and a bool input through Not: TVM's kernels take `bool *`, and so does the API."""
    zero = numpy_helper.from_array(np.zeros(1, np.float32), "zero")
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["positive"], name="greater"),
        helper.make_node("Not", ["flags"], ["flipped"], name="not"),
    ]
    model = onnx_model(nodes, [tensor("x", "float32"), tensor("flags", "bool")],
                       [tensor("positive", "bool"), tensor("flipped", "bool")], [zero])
    assert_compiles_and_passes(cli_in_process, write(tmp_path, "bool_io.onnx", model))


def test_concat_with_an_empty_constant_piece_compiles(tmp_path: Path, cli_in_process) -> None:
    empty = helper.make_tensor("empty", TensorProto.FLOAT, (1, 0), [])
    node = helper.make_node("Concat", ["x", "empty", "x"], ["y"], name="concat", axis=1)
    model = onnx_model([node], [tensor("x", "float32")], [tensor("y", "float32", (1, 8))], [empty])
    assert_compiles_and_passes(cli_in_process, write(tmp_path, "empty_piece.onnx", model))


def test_float16_weights_read_by_dequantize_compile_as_float32(tmp_path: Path, cli_in_process) -> None:
    """TFLite's float16-quantized format: float16 weights -> DEQUANTIZE -> FULLY_CONNECTED; TVM imports float32
    weights, so the model is not refused for its float16 tensor, and matches LiteRT."""
    spec = fuzz_corpus.TinyTflite()
    dequantize = 6  # BuiltinOperator.DEQUANTIZE
    spec.opcodes.append((dequantize, 1, None))
    spec.tensors[1] = fuzz_corpus.TinyTensor("weights", (3, 4), fuzz_corpus.FLOAT32, 0)
    spec.tensors.append(fuzz_corpus.TinyTensor("weights_fp16", (3, 4), fuzz_corpus.FLOAT16, 3))
    spec.buffers.append((np.arange(12) / 7).astype("<f2").tobytes())
    spec.operators.insert(0, fuzz_corpus.TinyOperator(1, (4,), (1,)))
    assert_compiles_and_passes(cli_in_process, write(tmp_path, "fp16_weights.tflite", fuzz_corpus.build_tflite(spec)))


def tflite_add(type_code: int) -> fuzz_corpus.TinyTflite:
    """sum = a + b, every tensor of TFLite TensorType `type_code`."""
    tensors = [fuzz_corpus.TinyTensor(name, (1, 4), type_code, 0) for name in ("a", "b", "sum")]
    add = 0  # BuiltinOperator.ADD
    return fuzz_corpus.TinyTflite(opcodes=[(add, 1, None)], tensors=tensors,
                                  operators=[fuzz_corpus.TinyOperator(0, (0, 1), (2,))], inputs=(0, 1),
                                  outputs=(2,), buffers=[b""])


REFUSED = {
    "float16 ONNX input": ("f16.onnx", fuzz_corpus.float16_relu_onnx, ("input 'x' is float16",)),
    "float16 ONNX intermediate": (
        "f16_inside.onnx", fuzz_corpus.float16_inside_onnx, ("tensor 'half' written by node 'to_half'", "float16")
    ),
    "float16 TFLite input": (
        "f16.tflite", lambda: fuzz_corpus.float16_input_tflite(), ("tensor 0 'input' is float16",)
    ),
    "uint16 TFLite tensors (TVM's TFLite frontend has no uint16)": (
        "add_u16.tflite", lambda: tflite_add(16), ("tensor 0 'a' has unsupported type UINT16",)
    ),
    "float64 TFLite tensors (nor float64)": (
        "add_f64.tflite", lambda: tflite_add(10), ("tensor 0 'a' has unsupported type FLOAT64",)
    ),
    "denormal scale": (
        "denormal.tflite",
        lambda: fuzz_corpus.with_scales(fuzz_corpus._int8_fully_connected(), {"input": 1e-45}),
        ("tensor 0 'input'", "quantization scales", "normal"),
    ),
    "multiplier above 2^30": (
        "huge_multiplier.tflite",
        lambda: fuzz_corpus.with_scales(fuzz_corpus._int8_fully_connected(), {"dense/output": 1e-30}),
        ("tensor 3 'dense/output'", "FULLY_CONNECTED", "2.5e+27"),
    ),
    "multiplier below 2^-32": (
        "tiny_multiplier.tflite",
        lambda: fuzz_corpus.with_scales(
            fuzz_corpus._int8_fully_connected(), {"input": 1e-15, "weights": 1e-15, "bias": 1e-30}
        ),
        ("tensor 3 'dense/output'", "FULLY_CONNECTED", "2e-29"),
    ),
    "Expand to 2^32 elements": (
        "expand.onnx",
        fuzz_corpus.expand_to_2_32_onnx,
        ("tensor 'big' written by node 'expand' (Expand)", f"needs {2**32 * 4} bytes"),
    ),
    "TFLite tensor of 128 MiB": (
        "oversized.tflite",
        fuzz_corpus.oversized_relu_tflite,
        ("tensor 0 'input'", f"needs {fuzz_corpus.OVERSIZED_ELEMENTS * 4} bytes"),
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_in_one_line_naming_the_tensor(case: str, tmp_path: Path) -> None:
    file_name, make, words = REFUSED[case]
    model = make()
    data = model if isinstance(model, onnx.ModelProto) else fuzz_corpus.build_tflite(model)
    assert_refused_naming(write(tmp_path, file_name, data), *words)


def test_oversized_tensor_is_refused_by_the_model_check_itself(tmp_path: Path) -> None:
    """Before TVM: the Expand's 16 GiB must never be computed, so the refusal is the model check's."""
    with pytest.raises(ModelError) as raised:
        check_model(write(tmp_path, "expand.onnx", fuzz_corpus.expand_to_2_32_onnx()))
    assert raised.value.kind is ErrorKind.TENSOR


def broadcast_to_2_32_module():
    """A user's Relax module: a constant broadcast to [65536, 65536] (16 GiB of float32), summed, added to x."""
    from tvm import relax

    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    with builder.function("main", [x]):
        with builder.dataflow():
            one = relax.const(1.0, "float32")
            big = builder.emit(relax.op.broadcast_to(one, relax.ShapeExpr([65536, 65536])), name_hint="big")
            total = builder.emit(relax.op.sum(big))
            y = builder.emit_output(relax.op.add(x, total))
        builder.emit_func_output(y)
    return builder.get()


def test_relax_module_with_a_tensor_no_target_fits_is_refused_before_folding(tmp_path: Path) -> None:
    """No model check sees a user's Relax module: the pass pipeline refuses it before FoldConstant would
    compute the 16 GiB broadcast on the host."""
    from tvm_ext.compile import CompileError, compile

    out = tmp_path / "out"
    with pytest.raises(CompileError) as raised:
        compile(broadcast_to_2_32_module(), "lowpower", out, name="big")
    text = str(raised.value)
    assert "\n" not in text and text.startswith("big.relax: "), text
    assert f"tensor big float32[65536, 65536] needs {2**32 * 4} bytes" in text, text
    assert list(tmp_path.iterdir()) == []
