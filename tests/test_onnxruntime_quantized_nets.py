"""Standard CNNs (tests/onnx_cnn_zoo.py) quantized by onnxruntime's own ``quantize_static`` (QDQ and QOperator
formats, per-tensor and per-channel weights, int8 and uint8 activations) compile, take the integer path and equal
onnxruntime bit for bit on many inputs over and beyond the calibrated range.

Before, the QDQ models were refused ("relax.add at layer ..._QuantizeLinear has no exact integer lowering": the
classifier's Gemm bias; "relax.nn.max_pool2d ... no exact integer lowering": MaxPool between Q/DQ), QOperator
models at onnxruntime's com.microsoft operators (QLinearAdd, QLinearConcat, QLinearGlobalAveragePool, QGemm),
ShuffleNetV2's Split as "a non-tensor result"; and the MobileNetV2 QDQ model that compiled differed from
onnxruntime on one input in ten (its residual Adds rounded as TFLite's ADD).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnxruntime import quantization
from memory_planner.plan import TensorRole

from conftest import profile_target
from onnx_cnn_zoo import NETS
from onnxruntime_match import NormalCalibration, mismatches
from tvm_ext.compile import compile


def quantized_net(folder: Path, net: str, quant_format: str, per_channel: bool, activations: str) -> Path:
    """The float net written into ``folder`` and quantized by onnxruntime's quantize_static as asked; int8
    activations get int8 weights, uint8 activations uint8 weights."""
    model = NETS[net]()
    float_path, path = folder / f"{net}_float.onnx", folder / f"{net}.onnx"
    onnx.save(model, str(float_path))
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    quantization.quantize_static(
        str(float_path), str(path), NormalCalibration("input", shape),
        quant_format=getattr(quantization.QuantFormat, quant_format),
        per_channel=per_channel, activation_type=getattr(quantization.QuantType, activations),
        weight_type=getattr(quantization.QuantType, activations))
    return path


CASES = [
    ("mobilenet_v2", "QDQ", True, "QInt8"), ("mobilenet_v2", "QOperator", False, "QUInt8"),
    ("mnasnet", "QDQ", False, "QUInt8"), ("squeezenet", "QDQ", True, "QInt8"),
    ("squeezenet", "QOperator", True, "QInt8"), ("resnet", "QDQ", True, "QInt8"),
    ("resnet", "QOperator", False, "QUInt8"), ("shufflenet_v2", "QDQ", True, "QInt8"),
    ("pools_and_resize", "QDQ", False, "QUInt8"), ("pools_and_resize", "QOperator", True, "QInt8"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("net", "quant_format", "per_channel", "activations"), CASES,
                         ids=[f"{n}-{f}-{'per_channel' if c else 'per_tensor'}-{a}" for n, f, c, a in CASES])
def test_onnxruntime_quantized_net_equals_onnxruntime(tmp_path, net, quant_format, per_channel, activations):
    path = quantized_net(tmp_path, net, quant_format, per_channel, activations)
    bundle = compile(path, "lowpower", tmp_path / "out")
    between = [t for t in bundle.plan.tensors.values() if t.role in (TensorRole.INTERMEDIATE, TensorRole.SCRATCH)]
    assert all(np.dtype(t.dtype).kind in "iu" for t in between), [(t.name, t.dtype) for t in between]
    assert mismatches(bundle, path, 40) == []


@pytest.mark.slow
def test_mobilenet_v2_qdq_equals_onnxruntime_on_cortex_m4f(tmp_path):
    # On the core: hardware fused multiply-adds in the residual QLinearAdds, the float requantizations of the FPU.
    from cortex_m_many_inputs import run_on_qemu
    from onnxruntime_match import full_range_inputs, session

    path = quantized_net(tmp_path, "mobilenet_v2", "QDQ", True, "QInt8")
    bundle = compile(path, "cortex-m4f", tmp_path / "out")
    reference = session(path)
    draw, rng = full_range_inputs(reference), np.random.default_rng(7)
    inputs = [draw(rng)["input"] for _ in range(12)]
    expected = [reference.run(None, {"input": x})[0] for x in inputs]
    run = run_on_qemu(bundle.out_dir, tmp_path / "qemu", bundle.plan.model, inputs, expected,
                      profile_target("cortex-m4f").board)
    assert run.exit_status == 0 and "many inputs: PASS" in run.stdout, f"ended with {run.ending()}: {run.stdout}"
