"""A keyword-spotting head written in PyTorch (nn.GRU over MFCC frames, a Linear on the last step, random
weights), exported by torch.onnx (TorchScript's exporter, opset 17) and quantized by onnxruntime's quantize_static,
compile and equal onnxruntime. TVM 0.27 has no converter for ONNX's GRU or LSTM: every such model was refused
("unsupported operators: GRU") until our own (tvm_ext/frontend/onnx_ops/recurrent.py). quantize_static leaves the
recurrent operator float, between a DequantizeLinear and a QuantizeLinear. Needs the ``models`` extra (torch)."""

from __future__ import annotations

import onnx
import pytest
from onnxruntime import quantization

from onnxruntime_match import NormalCalibration, mismatches
from tvm_ext.compile import compile

STEPS, FEATURES, UNITS, CLASSES = 7, 5, 8, 4
SHAPE = (1, STEPS, FEATURES)


# GRU alone (seconds): ONNX's own node tests check GRU's, LSTM's and RNN's equations (test_onnx_conformance.py);
# this checks PyTorch's form of them (linear_before_reset=1, an initial_h Expanded from a computed shape) in a QDQ
# model.
@pytest.mark.parametrize("cell", ["GRU"])
def test_pytorch_recurrent_export_compiles_quantized(tmp_path, cell):
    torch = pytest.importorskip("torch")
    from pytorch_nets import KeywordNet

    torch.manual_seed(0)
    path, quantized = tmp_path / f"{cell}.onnx", tmp_path / f"{cell}_int8.onnx"
    net = KeywordNet(getattr(torch.nn, cell), FEATURES, UNITS, CLASSES).eval()
    torch.onnx.export(net, (torch.randn(*SHAPE),), str(path), dynamo=False, opset_version=17)
    assert cell in {node.op_type for node in onnx.load(str(path)).graph.node}
    input_name = onnx.load(str(path)).graph.input[0].name
    quantization.quantize_static(str(path), str(quantized), NormalCalibration(input_name, SHAPE),
                                 quant_format=quantization.QuantFormat.QDQ, per_channel=True)
    assert cell in {node.op_type for node in onnx.load(str(quantized)).graph.node}  # left float by onnxruntime
    bundle = compile(quantized, "lowpower", tmp_path / "int8")  # its self-test against onnxruntime passes
    assert mismatches(bundle, quantized, 10) == []
