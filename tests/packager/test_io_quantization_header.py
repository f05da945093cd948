"""Every int8 bundle states its inputs' and outputs' quantization (issue 32, item 1): `<model>.h` gives each
one's type, dimensions and layout and, when quantized, its exact scale and zero point as macros, with
`<model>_quantize_input<k>()` and `<model>_dequantize_output<k>()`; `manifest.json` the same facts. Checked
against what the model file says as TFLite Micro's interpreter reads it (not our parser), and against onnxruntime
and numpy's quantization of random floats, ties included."""

from __future__ import annotations

import ctypes
import re
import json
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from c_checks import STRICT_WARNINGS
from conftest import example_model, models_dir
from test_quantize_helpers_c import sample_values
from tvm_ext.compile import compile
from tvm_ext.reference.runtimes import _tflite_micro_interpreter

TFLITE_INT8 = ["tflm/person_detect.tflite", "mlperf_tiny/kws_ref_model.tflite"]


def header_exports(bundle, folder: Path) -> ctypes.CDLL:
    """The bundle's header compiled with the strict warnings into a shared library that exports, per input k
    and output k with helpers, `quantize_input<k>` / `dequantize_output<k>` (calling the header's), and per
    tensor its scale, zero point and dims as the C compiler reads the macros."""
    m, M = bundle.plan.model, bundle.plan.model.upper()
    header = (bundle.out_dir / f"{m}.h").read_text()
    lines = [f'#include "{m}.h"']
    for kind in ("input", "output"):
        for k in range(len(getattr(bundle.plan, f"{kind}s"))):
            macro = f"{M}_{kind.upper()}{k}"
            lines.append(f"const unsigned {kind}{k}_dims[] = {macro}_DIMS;")
            lines.append(f"const int {kind}{k}_quantized = {macro}_QUANTIZED;")
            if f"#define {macro}_SCALE " in header:
                lines.append(f"const float {kind}{k}_scale = {macro}_SCALE;")
                lines.append(f"const int {kind}{k}_zero_point = {macro}_ZERO_POINT;")
        for k in range(len(getattr(bundle.plan, f"{kind}s"))):
            verb = "quantize" if kind == "input" else "dequantize"
            if f" {m}_{verb}_{kind}{k}(" in header:
                ctype = f"{M}_{kind.upper()}{k}_TYPE"
                args = (f"const float* v, {ctype}* q, size_t n", "v, q, n") if kind == "input" else (
                    f"const {ctype}* q, float* v, size_t n", "q, v, n")
                lines.append(f"void {verb}_{kind}{k}({args[0]}) {{ {m}_{verb}_{kind}{k}({args[1]}); }}")
    source = folder / "exports.c"
    source.write_text("\n".join(lines) + "\n")
    library = folder / "libexports.so"
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Wno-missing-prototypes", *STRICT_WARNINGS.split(),
                    "-shared", "-fPIC", f"-I{bundle.out_dir}", str(source), "-lm", "-o", str(library)], check=True)
    return ctypes.CDLL(str(library))


def c_value(library: ctypes.CDLL, name: str, ctype):
    return ctype.in_dll(library, name).value


def c_dims(library: ctypes.CDLL, name: str, rank: int) -> tuple[int, ...]:
    return tuple((ctypes.c_uint * rank).in_dll(library, name))


def tflite_quantize(values: np.ndarray, scale: float, zero_point: int, dtype) -> np.ndarray:
    """TFLite's QUANTIZE in numpy: the float32 quotient, rounded half away from zero, plus the zero point,
    saturated."""
    quotient = (values.astype(np.float32) / np.float32(scale)).astype(np.float64)
    rounded = np.sign(quotient) * np.floor(np.abs(quotient) + 0.5)
    info = np.iinfo(dtype)
    return np.clip(rounded + zero_point, info.min, info.max).astype(dtype)


def quantize_with(library: ctypes.CDLL, function: str, values: np.ndarray, dtype) -> np.ndarray:
    values = np.ascontiguousarray(values, np.float32)
    out = np.zeros(values.shape, dtype)
    getattr(library, function)(ctypes.c_void_p(values.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                               ctypes.c_size_t(values.size))
    return out


def dequantize_with(library: ctypes.CDLL, function: str, quantized: np.ndarray) -> np.ndarray:
    out = np.zeros(quantized.shape, np.float32)
    getattr(library, function)(ctypes.c_void_p(quantized.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                               ctypes.c_size_t(quantized.size))
    return out


@pytest.mark.parametrize("model", TFLITE_INT8, ids=["person_detect", "kws_ref_model"])
def test_int8_tflite_header_states_the_files_quantization_and_its_helpers_quantize_as_tflite(compiled, tmp_path,
                                                                                             model):
    bundle = compiled(model)
    # TFLite Micro's interpreter reads the file (LiteRT's refuses person_detect's depthwise bias quantization).
    interpreter = _tflite_micro_interpreter((models_dir() / model).read_bytes())
    details = {"input": interpreter.get_input_details(0), "output": interpreter.get_output_details(0)}
    quantization = {kind: (float(d["quantization_parameters"]["scales"][0]),
                           int(d["quantization_parameters"]["zero_points"][0])) for kind, d in details.items()}
    library = header_exports(bundle, tmp_path)
    manifest = {t["name"]: t for t in json.loads((bundle.out_dir / "manifest.json").read_text())["tensors"]}
    for kind, detail in details.items():
        scale, zero_point = quantization[kind]
        assert detail["quantization_parameters"]["scales"].size == 1 and detail["dtype"] == np.int8
        assert c_value(library, f"{kind}0_scale", ctypes.c_float) == np.float32(scale)  # exact
        assert c_value(library, f"{kind}0_zero_point", ctypes.c_int) == zero_point
        assert c_value(library, f"{kind}0_quantized", ctypes.c_int) == 1
        assert c_dims(library, f"{kind}0_dims", len(detail["shape"])) == tuple(detail["shape"])
        entry = manifest[getattr(bundle.plan, f"{kind}s")[0]]
        assert entry["quantization"] == {"scale": float(np.float32(scale)), "zero_point": int(zero_point),
                                         "rounding": "half_away_from_zero"}
    header = (bundle.out_dir / f"{bundle.plan.model}.h").read_text()
    M = bundle.plan.model.upper()
    assert f'#define {M}_INPUT0_LAYOUT "NHWC"' in header and f"#define {M}_INPUT0_TYPE int8_t" in header
    in_scale, in_zero_point = quantization["input"]
    values = sample_values("int8", in_scale, in_zero_point)
    np.testing.assert_array_equal(quantize_with(library, "quantize_input0", values, np.int8),
                                  tflite_quantize(values, in_scale, in_zero_point, np.int8))
    out_scale, out_zero_point = quantization["output"]
    quantized = np.arange(-128, 128, dtype=np.int8)
    expected = ((quantized.astype(np.float64) - out_zero_point) * np.float64(np.float32(out_scale))).astype(np.float32)
    np.testing.assert_array_equal(dequantize_with(library, "dequantize_output0", quantized), expected)


def test_a_float_model_gets_no_quantization_macros(compiled, tmp_path):
    for model in ("tflm/hello_world_float.tflite", example_model):
        bundle = compiled(model)
        header = (bundle.out_dir / f"{bundle.plan.model}.h").read_text()
        M = bundle.plan.model.upper()
        assert "_SCALE" not in header and "_ZERO_POINT" not in header and "lp_quantize" not in header
        assert f"#define {M}_INPUT0_QUANTIZED 0" in header and f"#define {M}_INPUT0_TYPE float" in header
        manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
        assert not any("quantization" in tensor for tensor in manifest["tensors"])
    assert f"#define {M}_INPUT0_LAYOUT \"NCHW\"" in header  # the example: an ONNX image input


def qdq_model(path: Path, dtype: str) -> Path:
    """An ONNX QDQ model whose graph input and output are integers: x -> DequantizeLinear -> Relu ->
    QuantizeLinear -> y (a uint8 one's scale and zero points differ from an int8 one's)."""
    elem = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}[dtype]
    in_zero_point, out_zero_point = (-3, 5) if dtype == "int8" else (130, 7)
    nodes = [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zp"], ["real"]),
             helper.make_node("Relu", ["real"], ["relu"]),
             helper.make_node("QuantizeLinear", ["relu", "y_scale", "y_zp"], ["y"])]
    graph = helper.make_graph(
        nodes, "qdq", [helper.make_tensor_value_info("x", elem, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", elem, [1, 3, 4, 4])],
        [numpy_helper.from_array(np.array(0.0473, np.float32), "x_scale"),
         numpy_helper.from_array(np.array(in_zero_point, dtype), "x_zp"),
         numpy_helper.from_array(np.array(0.5, np.float32), "y_scale"),
         numpy_helper.from_array(np.array(out_zero_point, dtype), "y_zp")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_an_onnx_qdq_models_integer_input_and_output_get_their_scales(tmp_path, dtype):
    path = qdq_model(tmp_path / "qdq.onnx", dtype)
    bundle = compile(path, "lowpower", tmp_path / "out", jobs=1)
    library = header_exports(bundle, tmp_path)
    graph = onnx.load(str(path)).graph
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    for kind, scale, zero_point in (("input", "x_scale", "x_zp"), ("output", "y_scale", "y_zp")):
        assert c_value(library, f"{kind}0_scale", ctypes.c_float) == constants[scale]
        assert c_value(library, f"{kind}0_zero_point", ctypes.c_int) == int(constants[zero_point])
    header = (bundle.out_dir / "qdq.h").read_text()
    assert "LP_ROUND_HALF_TO_EVEN);" in header and '#define QDQ_INPUT0_LAYOUT "NCHW"' in header
    # The input helper rounds as onnxruntime's QuantizeLinear, ties to even.
    scale, zero_point = float(constants["x_scale"]), int(constants["x_zp"])
    values = sample_values(dtype, scale, zero_point)
    quantize = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["v", "x_scale", "x_zp"], ["q"])], "q",
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [values.size])],
        [helper.make_tensor_value_info("q", graph.input[0].type.tensor_type.elem_type, [values.size])],
        [numpy_helper.from_array(constants["x_scale"], "x_scale"), numpy_helper.from_array(constants["x_zp"], "x_zp")])
    session = onnxruntime.InferenceSession(helper.make_model(quantize, opset_imports=[helper.make_opsetid("", 13)])
                                           .SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(quantize_with(library, "quantize_input0", values, dtype),
                                  session.run(None, {"v": values})[0])


def test_the_readmes_firmware_loop_runs_on_person_detects_bundle(compiled, tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    source = re.search(r"^```text\n(/\* main\.c: person_detect .*?)^```", readme, re.MULTILINE | re.DOTALL).group(1)
    (tmp_path / "main.c").write_text(source)
    bundle = compiled("tflm/person_detect.tflite")
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{bundle.out_dir}",
                    str(tmp_path / "main.c"), str(bundle.library), "-lm", "-o", str(tmp_path / "main")], check=True)
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True)
    scores = [float(x) for x in re.fullmatch(r"no person (\S+), person (\S+)\n", run.stdout).groups()]
    assert abs(sum(scores) - 1.0) <= 2 / 256, scores  # a softmax's two outputs, each within a step of 1/256


def test_a_header_of_per_channel_and_16_bit_io_compiles_and_states_them(tmp_path):
    """A hand-made plan (no TVM): an int8 input quantized per channel (axis 3) gets its axis and arrays and no
    helper; an int16 output quantized per tensor gets its dequantize helper; a uint16 output no helper."""
    from memory_planner.plan import ExecutionPlan, QuantParams, QuantRounding, Tensor, TensorRole
    from packager.header import write_header
    from packager.io_names import io_tensors

    per_channel = QuantParams((0.5, 0.25, 0.125), (1, -2, 3), 3, QuantRounding.HALF_AWAY_FROM_ZERO)
    tensors = {
        "x": Tensor("x", (1, 2, 2, 3), "int8", TensorRole.INPUT, "x", per_channel, layout="NHWC"),
        "y": Tensor("y", (1, 5), "int16", TensorRole.OUTPUT, "y", QuantParams((3.0517578125e-05,), (0,))),
        "z": Tensor("z", (2,), "uint16", TensorRole.OUTPUT, "z", QuantParams((0.1,), (7,))),
    }
    plan = ExecutionPlan("hand", "hand-made", "lowpower", tensors, [], ["x"], ["y", "z"])
    header = write_header(plan, io_tensors(plan, ["x"], ["x"], "input"), io_tensors(plan, ["y", "z"], ["y", "z"],
                                                                                     "output"), 0, 16)
    (tmp_path / "hand.h").write_text(header)
    assert "hand_quantize_input0" not in header and "hand_dequantize_output1" not in header
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "hand.h"\n'
        "int main(void)\n{\n"
        "  const float scales[] = HAND_INPUT0_SCALES;\n  const int zero_points[] = HAND_INPUT0_ZERO_POINTS;\n"
        "  const int16_t q[] = {-32768, -1, 0, 1, 32767};\n  float v[5];\n"
        "  hand_dequantize_output0(q, v, 5);\n"
        '  printf("%u %s %u %a %a %a %d %d %d %a %d %a %d\\n", HAND_INPUT0_QUANT_AXIS, HAND_INPUT0_LAYOUT,\n'
        "         HAND_INPUT0_CHANNELS, (double)scales[0], (double)scales[1], (double)scales[2], zero_points[0],\n"
        "         zero_points[1], zero_points[2], (double)HAND_OUTPUT0_SCALE, HAND_OUTPUT1_ZERO_POINT,\n"
        "         (double)v[0], HAND_OUTPUT1_QUANTIZED);\n"
        "  return 0;\n}\n")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{tmp_path}",
                    str(tmp_path / "main.c"), "-lm", "-o", str(tmp_path / "main")], check=True)
    printed = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.split()
    assert printed[:3] == ["3", "NHWC", "3"]
    assert [float.fromhex(s) for s in printed[3:6]] == [0.5, 0.25, 0.125] and printed[6:9] == ["1", "-2", "3"]
    assert float.fromhex(printed[9]) == 3.0517578125e-05 and printed[10] == "7"
    assert float.fromhex(printed[11]) == -1.0 and printed[12] == "1"
