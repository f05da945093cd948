"""The per-layer report (report.md and the manifest's layer_report) of every bundle.

- Its per-call MACs add up to the model's MACs counted independently from the model file (TFLite: output
  elements x kernel taps of each CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED; ONNX: of each Conv and Gemm).
- On the host profile there are no instruction columns, and the report says why.
- On cortex-m4f under QEMU, the instructions counted per call by the profiling build add up to the shipped
  run function's count of the whole inference, less the run function's own instructions: its code is straight
  line (argument checks, then one call per kernel, no loop), so it executes each of its instructions at most
  once, and every Thumb instruction takes at least 2 bytes: the difference is bounded by the run functions'
  code bytes / 2 (of the shipped build one way, of the profiling build the other way, which sets up the
  same arguments) plus the counter's own instructions in the shipped self-test's measurement.
- The profiling build leaves the shipped library's bytes alone, and the shipped code never calls the counter.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
import tflite
from onnx import shape_inference

from emulator.profile import read_call_profile
from emulator.tools import missing_tools
from memory_planner.plan import ExecutionPlan, KernelCall, ModelOperator, Tensor, TensorRole
from backends.cortex_m.bundle_files import PROFILE_ELF, SELFTEST_ELF
from packager.report import layer_report
from tflite_builder import Model, Operator, Options, Quantization, Tensor as TfliteTensor, build
from tvm_ext.compile import compile
from tvm_ext.example import write_example_model

SAME, VALID = 0, 1  # tflite.Padding


def _quantization(scales: tuple[float, ...], zero_point: int = 0, axis: int = 0) -> Quantization:
    return Quantization(scales, (zero_point,) * len(scales), axis)


def conv_depthwise_fc_model(seed: int = 0) -> bytes:
    """An int8 model: CONV_2D 3x3 (2 -> 4 channels, SAME) -> DEPTHWISE_CONV_2D 3x3 stride 2 (SAME) ->
    FULLY_CONNECTED (64 -> 5), per-channel weights on the convolutions."""
    rng = np.random.default_rng(seed)
    cin, channels, units = 2, 4, 5
    conv_w = rng.integers(-127, 128, (channels, 3, 3, cin)).astype(np.int8)
    depthwise_w = rng.integers(-127, 128, (1, 3, 3, channels)).astype(np.int8)
    fc_w = rng.integers(-127, 128, (units, 4 * 4 * channels)).astype(np.int8)
    scales = (0.011, 0.007, 0.013, 0.009)

    def bias(count: int, scale: tuple[float, ...]) -> tuple[np.ndarray, Quantization]:
        return rng.integers(-300, 300, count).astype(np.int32), _quantization(scale)

    conv_b, conv_bq = bias(channels, tuple(0.05 * s for s in scales))
    depthwise_b, depthwise_bq = bias(channels, tuple(0.1 * s for s in scales))
    fc_b, fc_bq = bias(units, (0.002,))
    tensors = [
        TfliteTensor("input", (1, 8, 8, cin), "int8", _quantization((0.05,), -3)),
        TfliteTensor("conv/weights", conv_w.shape, "int8", _quantization(scales, axis=0), conv_w),
        TfliteTensor("conv/bias", conv_b.shape, "int32", conv_bq, conv_b),
        TfliteTensor("conv/output", (1, 8, 8, channels), "int8", _quantization((0.1,), 2)),
        TfliteTensor("depthwise/weights", depthwise_w.shape, "int8", _quantization(scales, axis=3), depthwise_w),
        TfliteTensor("depthwise/bias", depthwise_b.shape, "int32", depthwise_bq, depthwise_b),
        TfliteTensor("depthwise/output", (1, 4, 4, channels), "int8", _quantization((0.2,), -1)),
        TfliteTensor("dense/weights", fc_w.shape, "int8", _quantization((0.01,)), fc_w),
        TfliteTensor("dense/bias", fc_b.shape, "int32", fc_bq, fc_b),
        TfliteTensor("dense/output", (1, units), "int8", _quantization((0.5,), 0)),
    ]
    spatial = {"Padding": SAME, "DilationWFactor": 1, "DilationHFactor": 1}
    operators = [
        Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {**spatial, "StrideW": 1, "StrideH": 1}), 3),
        Operator("DEPTHWISE_CONV_2D", (3, 4, 5), (6,), Options(
            "DepthwiseConv2DOptions", {**spatial, "StrideW": 2, "StrideH": 2, "DepthMultiplier": 1}), 3),
        Operator("FULLY_CONNECTED", (6, 7, 8), (9,), Options("FullyConnectedOptions", {}), 3),
    ]
    return build(Model(tensors, operators, inputs=(0,), outputs=(9,)))


def float_two_convs_add_model(seed: int = 0) -> bytes:
    """A float model: conv1 = CONV_2D 3x3 (2 -> 4 channels, SAME, RELU); conv2 = CONV_2D 3x3 (4 -> 4, SAME) of
    conv1; sum = ADD(conv2, conv1). FuseOps makes two kernels: conv1 with its bias and RELU, conv2 with its bias
    and the ADD; the first kernel is read only by the second (no unfused operator between them)."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(4, 3, 3, 2)).astype(np.float32)
    w2 = rng.normal(size=(4, 3, 3, 4)).astype(np.float32)
    tensors = [
        TfliteTensor("input", (1, 8, 8, 2), "float32"),
        TfliteTensor("conv1/weights", w1.shape, "float32", data=w1),
        TfliteTensor("conv1/bias", (4,), "float32", data=rng.normal(size=4).astype(np.float32)),
        TfliteTensor("conv1", (1, 8, 8, 4), "float32"),
        TfliteTensor("conv2/weights", w2.shape, "float32", data=w2),
        TfliteTensor("conv2/bias", (4,), "float32", data=rng.normal(size=4).astype(np.float32)),
        TfliteTensor("conv2", (1, 8, 8, 4), "float32"),
        TfliteTensor("sum", (1, 8, 8, 4), "float32"),
    ]
    same = {"Padding": SAME, "StrideW": 1, "StrideH": 1, "DilationWFactor": 1, "DilationHFactor": 1}
    operators = [
        Operator("CONV_2D", (0, 1, 2), (3,), Options("Conv2DOptions", {**same, "FusedActivationFunction": 1})),
        Operator("CONV_2D", (3, 4, 5), (6,), Options("Conv2DOptions", same)),
        Operator("ADD", (6, 3), (7,), Options("AddOptions", {})),
    ]
    return build(Model(tensors, operators, inputs=(0,), outputs=(7,)))

def tflite_macs(data: bytes) -> dict[int, int]:
    """Per operator index, the MACs of each CONV_2D (OHWI weights: output elements x KH*KW*I),
    DEPTHWISE_CONV_2D ((1, KH, KW, O): x KH*KW) and FULLY_CONNECTED ((O, K): x K) of the first subgraph."""
    root = tflite.Model.GetRootAsModel(data, 0)
    names = {v: k for k, v in tflite.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    graph = root.Subgraphs(0)
    macs = {}
    for index in range(graph.OperatorsLength()):
        op = graph.Operators(index)
        code = root.OperatorCodes(op.OpcodeIndex())
        name = names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
        weights = graph.Tensors(op.Inputs(1)).ShapeAsNumpy() if op.InputsLength() > 1 else None
        taps = {"CONV_2D": lambda: math.prod(weights[1:]), "DEPTHWISE_CONV_2D": lambda: math.prod(weights[1:3]),
                "FULLY_CONNECTED": lambda: int(weights[-1])}.get(name)
        if taps is not None:
            macs[index] = int(math.prod(graph.Tensors(op.Outputs(0)).ShapeAsNumpy())) * int(taps())
    return macs


def onnx_macs(model: onnx.ModelProto) -> dict[int, int]:
    """Per node index, the MACs of each Conv (output elements x (I/groups)*KH*KW) and Gemm (x K)."""
    inferred = shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*inferred.graph.value_info, *inferred.graph.output]}
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    macs = {}
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Conv":
            macs[index] = math.prod(shapes[node.output[0]]) * math.prod(weights[node.input[1]][1:])
        elif node.op_type == "Gemm":
            macs[index] = math.prod(shapes[node.output[0]]) * shapes[node.input[0]][-1]
    return macs


def _macs_by_operator(report_facts: dict) -> dict[int, int]:
    """The report's MACs per model operator index (a call's MACs go to its operators with MACs)."""
    found: dict[int, int] = {}
    for call in report_facts["calls"]:
        if call["macs"]:
            first = call["layers"][0]["index"]
            found[first] = found.get(first, 0) + call["macs"]
    return found


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_example_report_counts_the_onnx_macs_and_has_no_instruction_columns_on_the_host(tmp_path):
    model_path = write_example_model(tmp_path / "example_kws_cnn.onnx")
    bundle = compile(model_path, "lowpower", tmp_path / "out")
    facts = _manifest(bundle.out_dir)["layer_report"]
    expected = onnx_macs(onnx.load(str(model_path)))
    assert facts["totals"]["macs"] == sum(c["macs"] for c in facts["calls"]) == sum(expected.values())
    assert _macs_by_operator(facts) == expected
    assert [c["step"] for c in facts["calls"]] == list(range(len(bundle.plan.calls)))
    assert all("instructions" not in c for c in facts["calls"])
    report = (bundle.out_dir / "report.md").read_text()
    assert "instructions per call)" in report and "| instructions |" not in report
    assert "not measured (the lowpower profile's self-test runs on the host" in report
    # channels-last shapes: the passes run the example's convolutions in NHWC (the manifest's subgraph_layouts)
    assert f"| 2 | conv2 #3; relu2 #4 | Conv + Relu | `{bundle.plan.calls[2].kernel}` | 1x24x5x8 | 1x24x5x16 | " \
           f"{expected[3]:,} | " in report


def test_int8_conv_depthwise_fc_report_counts_the_tflite_macs(tmp_path):
    data = conv_depthwise_fc_model()
    model_path = tmp_path / "conv_dw_fc.tflite"
    model_path.write_bytes(data)
    bundle = compile(model_path, "lowpower", tmp_path / "out")
    facts = _manifest(bundle.out_dir)["layer_report"]
    expected = tflite_macs(data)
    assert expected == {0: 8 * 8 * 4 * 3 * 3 * 2, 1: 4 * 4 * 4 * 3 * 3, 2: 5 * 64}  # the model as written
    assert _macs_by_operator(facts) == expected
    assert facts["totals"]["macs"] == sum(expected.values())
    # Bytes: the weights and biases each call reads, the activations it reads and writes (int8: 1 B each).
    weights = {c["layers"][0]["operator"]: c["weight_bytes"] for c in facts["calls"]}
    assert weights["CONV_2D"] >= 4 * 3 * 3 * 2 and weights["FULLY_CONNECTED"] >= 5 * 64
    assert [(c["activation_read_bytes"], c["activation_written_bytes"]) for c in facts["calls"]] == [
        (8 * 8 * 2, 8 * 8 * 4), (8 * 8 * 4, 4 * 4 * 4), (4 * 4 * 4, 5)]
    # Stored: each constant once; the conv and the depthwise conv read one requantization multiplier and shift.
    stored = facts["totals"]["weight_bytes_stored"]
    assert stored == bundle.weight_bytes < sum(c["weight_bytes"] for c in facts["calls"])


def test_report_cells_keep_hostile_layer_names_literal():
    """A layer name from the model is text in one table cell: no `|`, newline or markup of its own."""
    tensors = {
        "x": Tensor("x", (1, 4), "int8", TensorRole.INPUT),
        "w": Tensor("w", (4, 4), "int8", TensorRole.CONSTANT),
        "y": Tensor("y", (1, 4), "int8", TensorRole.OUTPUT),
    }
    hostile = ModelOperator("a|b\n# <script>`x`", "FULLY_CONNECTED", 7)
    call = KernelCall("m_dense_4", ("label",), ("x", "w"), ("y",), operators=(hostile,), macs=16)
    plan = ExecutionPlan("m", "m.tflite", "lowpower", tensors, [call], ["x"], ["y"])
    report = layer_report(plan, None, None)
    rows = [line for line in report.markdown().splitlines() if line.startswith("| 0 |")]
    assert len(rows) == 1
    assert rows[0].count(" | ") == 9  # ten cells: the name added no cell separator
    assert r"a\|b\\n\# \<script\>\`x\` #7" in rows[0]  # the line break shown as \n (its backslash escaped)
    assert report.facts()["calls"][0]["weight_bytes"] == 16 and report.facts()["totals"]["macs"] == 16


def test_call_profile_requires_one_count_per_call():
    profile = read_call_profile("selftest: ok\nprofile: empty region 8\nprofile: call 0 108\nprofile: call 1 58\n")
    assert profile.instructions == (100, 50) and profile.empty_region == 8
    with pytest.raises(RuntimeError, match="calls \\[0, 2\\]"):
        read_call_profile("profile: empty region 8\nprofile: call 0 108\nprofile: call 2 58\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_function_bytes(elf: Path, name: str) -> int:
    """The code bytes of model `name`'s run functions in `elf` (arm-none-eabi-nm's sizes): `<name>_run`, and
    `<name>_run_with_arena` unless gcc inlined it there and the link dropped it (--gc-sections)."""
    listing = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True, check=True)
    sizes = {fields[3]: int(fields[1], 16) for fields in (line.split() for line in listing.stdout.splitlines())
             if len(fields) == 4 and fields[2] in "Tt"}
    assert f"{name}_run" in sizes, f"no {name}_run in {elf}"
    return sizes[f"{name}_run"] + sizes.get(f"{name}_run_with_arena", 0)


def _make(out: Path, goal: str) -> str:
    """`make <goal>` of OUT/cortex_m/qemu-test.mk; its standard output."""
    return subprocess.run(["make", "-s", "-C", str(out), "-f", "cortex_m/qemu-test.mk", goal], check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.slow  # about 25 s: a compile, the self-test and the profiling build twice on QEMU
@pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"), reason="no arm-none-eabi/QEMU here")
def test_cortex_m4f_call_instructions_add_up_to_the_inference_and_leave_the_library_alone(tmp_path):
    data = conv_depthwise_fc_model()
    model_path = tmp_path / "conv_dw_fc.tflite"
    model_path.write_bytes(data)
    bundle = compile(model_path, "cortex-m4f", tmp_path / "out")
    out, name = bundle.out_dir, bundle.plan.model
    manifest = _manifest(out)
    facts = manifest["layer_report"]
    assert _macs_by_operator(facts) == tflite_macs(data)
    counts = [c["instructions"] for c in facts["calls"]]
    assert len(counts) == 3 and all(count > 0 for count in counts)
    whole = manifest["cortex_m"]["instructions_per_inference"]
    assert facts["totals"]["inference_instructions"] == whole and facts["totals"]["call_instructions"] == sum(counts)
    # The convolution (1,152 MACs and a requantization per output) costs more than the depthwise (576 MACs).
    assert counts[0] > counts[1]
    assert all(c["instructions_per_mac"] == pytest.approx(c["instructions"] / c["macs"]) for c in facts["calls"])

    assert not (out / PROFILE_ELF).parent.exists()  # the profiling build leaves no objects in the bundle
    assert not (out / SELFTEST_ELF).parent.exists()
    # The bound: rebuild both ELFs (finish_bundle deleted them) and read the run functions' code bytes.
    library = out / f"lib{name}.a"
    shipped_library = _sha256(library)
    _make(out, "cortex-m-elf")
    profile = read_call_profile(_make(out, "qemu-profile"))
    assert list(profile.instructions) == counts  # the same build and input count the same
    shipped_run = _run_function_bytes(out / SELFTEST_ELF, name) // 2
    profiled_run = _run_function_bytes(out / PROFILE_ELF, name) // 2
    difference = whole - sum(counts)  # the shipped count includes one start/reading pair of the counter
    assert -profiled_run <= difference <= shipped_run + profile.empty_region, (whole, counts, shipped_run,
                                                                               profiled_run)

    # The shipped library: the same bytes after the profiling build, its run function calls no counter.
    assert _sha256(library) == shipped_library
    symbols = subprocess.run(["arm-none-eabi-nm", str(library)], capture_output=True, text=True, check=True).stdout
    assert "lp_icount" not in symbols and "lp_profile" not in symbols
    assert "lp_icount" not in (out / f"{name}_model.c").read_text()
    assert "lp_profile_call(2u," in (out / "cortex_m" / f"{name}_model_profiled.c").read_text()


@pytest.mark.slow  # about 15 s: the device library and both board programs built with CMake, two QEMU runs
@pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"), reason="no arm-none-eabi/QEMU here")
def test_cmake_profiling_build_counts_the_calls_the_manifest_reports(compiled, tmp_path):
    """A CMake user gets the profiling build too (`--target qemu-profile`, configured for the device), and it
    counts each kernel call's instructions exactly as the Makefile's build that filled the manifest did."""
    bundle = compiled("tflm/hello_world_int8.tflite", "cortex-m4f")
    counts = [call["instructions"] for call in _manifest(bundle.out_dir)["layer_report"]["calls"]]
    build = tmp_path / "build"
    toolchain = bundle.out_dir / "cortex_m" / "arm-none-eabi.cmake"
    subprocess.run(["cmake", "-S", str(bundle.out_dir), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert not (build / "cortex_m" / "profile.elf").exists()  # not part of the default build
    run = subprocess.run(["cmake", "--build", str(build), "--target", "qemu-profile"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert list(read_call_profile(run.stdout).instructions) == counts


def test_a_constant_read_by_two_calls_counts_in_both_but_is_stored_once():
    tensors = {
        "x": Tensor("x", (1, 4), "int8", TensorRole.INPUT),
        "w": Tensor("w", (4, 4), "int8", TensorRole.CONSTANT),
        "h": Tensor("h", (1, 4), "int8", TensorRole.INTERMEDIATE),
        "y": Tensor("y", (1, 4), "int8", TensorRole.OUTPUT),
    }
    calls = [KernelCall("m_dense_4", ("fc0",), ("x", "w"), ("h",), macs=16),
             KernelCall("m_dense_4", ("fc1",), ("h", "w"), ("y",), macs=16)]
    report = layer_report(ExecutionPlan("m", "m.tflite", "lowpower", tensors, calls, ["x"], ["y"]), None, None)
    totals = report.facts()["totals"]
    assert (totals["weight_bytes"], totals["weight_bytes_stored"]) == (32, 16)
    assert "- weight bytes read: 32; stored (each constant once): 16" in report.markdown()


def test_float_fused_kernels_each_name_only_the_layers_they_compute(tmp_path):
    """Two CONV_2D + ADD of a float model fused into two kernels, the first read only by the second: each
    call's layers are those of its own group (conv1; conv2 and the ADD), not every layer of the chain, and
    each convolution's MACs go to its own layer. NHWC: no layout transposes between the groups."""
    model_path = tmp_path / "two_convs_add.tflite"
    data = float_two_convs_add_model()
    model_path.write_bytes(data)
    bundle = compile(model_path, "cortex-m4f", tmp_path / "out", build=False, layout="NHWC")
    facts = _manifest(bundle.out_dir)["layer_report"]
    assert [[layer["index"] for layer in call["layers"]] for call in facts["calls"]] == [[0], [1, 2]]
    assert _macs_by_operator(facts) == tflite_macs(data)
