"""Helium's QLinearConv (backends/cortex_m/schedules/helium_qlinear.py, the helpers
backends/cortex_m/helpers/templates/helium_qlinear.h.in): an onnxruntime QDQ model (``quantize_static``, per-channel
int8 weights) whose Convs onnxruntime fuses into QLinearConvs compiles on cortex-m55 to the vector helpers, not to
the generic scalar kernel: its 1x1 Conv one call of `<prefix>_qlinear_pointwise_s8` per output channel, its padded
3x3 Conv of stride 2 one call of `<prefix>_qlinear_row_s8` per output row (MVE: VMLA, VCVT, VRINTN), and stays bit
for bit with onnxruntime under QEMU mps3-an547 and on the host (the helpers' portable C); other cores keep the
generic kernel."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("onnxruntime")
from onnxruntime import quantization  # noqa: E402

from onnxruntime_match import NormalCalibration, mismatches  # noqa: E402
from test_requantize_epilogue import host_selftest_passes, needs_cross_tools  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SHAPE = (1, 16, 7, 9)
"""63 pixels: three steps of 16 and a predicated tail of 15."""


def _qdq_model(tmp_path):
    """A float model (x [1, 16, 7, 9] -> 1x1 Conv to 24 channels with a bias -> Relu -> 3x3 Conv, padded, stride 2,
    to 8 channels), quantized by onnxruntime's quantize_static (QDQ, per-channel weights); its path."""
    rng = np.random.default_rng(30)
    constants = [numpy_helper.from_array(rng.standard_normal((24, 16, 1, 1)).astype(np.float32) * 0.3, "w1"),
                 numpy_helper.from_array(rng.standard_normal(24).astype(np.float32), "b1"),
                 numpy_helper.from_array(rng.standard_normal((8, 24, 3, 3)).astype(np.float32) * 0.1, "w2"),
                 numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="pointwise"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="spatial", pads=[1, 1, 1, 1], strides=[2, 2])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    float_path, path = tmp_path / "float.onnx", tmp_path / "pointwise_int8.onnx"
    onnx.save(onnx.shape_inference.infer_shapes(model), str(float_path))
    quantization.quantize_static(str(float_path), str(path), NormalCalibration("x", SHAPE),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True)
    return path


@needs_cross_tools
def test_a_qdq_pointwise_conv_on_cortex_m55_is_the_vector_helper_and_stays_bit_exact(tmp_path):
    path = _qdq_model(tmp_path)
    bundle = compile(path, "cortex-m55", tmp_path / "m55")
    assert bundle.selftest.passed and bundle.selftest.where == "mps3-an547", bundle.selftest.output
    kernels = (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
    calls = re.findall(r"_qlinear_pointwise_s8\((.*)\);", kernels)
    assert len(calls) == 1 and ", 16, 63, " in calls[0], calls  # one call per output channel, in a loop
    assert "vrndnq_f32(" in (bundle.out_dir / f"{bundle.plan.model}_internal.h").read_text()
    pointwise = [call for call in bundle.plan.calls if "qlinearconv" in call.kernel and call.macs == 16 * 24 * 63]
    assert len(pointwise) == 1, [(c.kernel, c.macs) for c in bundle.plan.calls]  # its MACs declared
    rows = re.findall(r"_qlinear_row_s8\((.*)\);", kernels)
    assert len(rows) == 1 and ", 24, 63, 7, 9, 5, 3, 3, 2, 1, 1, " in rows[0], rows  # per output row, in loops
    spatial = [call for call in bundle.plan.calls if call.macs == 8 * 24 * 9 * 4 * 5]
    assert len(spatial) == 1, [(c.kernel, c.macs) for c in bundle.plan.calls]
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable loops
    assert mismatches(bundle, path, 10) == []


@needs_cross_tools
def test_other_cores_keep_the_generic_qlinear_conv(tmp_path):
    bundle = compile(_qdq_model(tmp_path), "cortex-m4f", tmp_path / "m4f")
    assert bundle.selftest.passed, bundle.selftest.output
    assert "_qlinear_" not in (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
