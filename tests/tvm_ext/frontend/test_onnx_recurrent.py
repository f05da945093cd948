"""ONNX RNN, GRU and LSTM (tvm_ext/frontend/onnx_ops/recurrent.py) in the forms ONNX's node tests leave out
(test_onnx_conformance.py's 'recurrent' family runs those): `clip`, non-default activations, a batch of two
through both directions, constant initial states and sequence_lens; and the one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from tvm import relax

from tvm_ext.compile import compile
from tvm_ext.frontend.onnx_ops.recurrent import CONVERTERS
from tvm_ext.frontend.tflite_ops.refusal import OperatorRefused

SEQ, BATCH, INPUT, HIDDEN = 4, 2, 3, 5


def _initializers(rng, prefix: str, gates: int, dirs: int) -> list:
    """W, R and B of a node of `gates` gates and `dirs` directions, standard normal."""
    shapes = {"W": (dirs, gates * HIDDEN, INPUT), "R": (dirs, gates * HIDDEN, HIDDEN), "B": (dirs, 2 * gates * HIDDEN)}
    return [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), prefix + name)
            for name, shape in shapes.items()]


def test_clip_activations_directions_and_initial_states_equal_onnxruntime(tmp_path):
    rng = np.random.default_rng(0)
    states = [numpy_helper.from_array(np.full(BATCH, SEQ, np.int32), "lens"),
              numpy_helper.from_array(rng.standard_normal((1, BATCH, HIDDEN)).astype(np.float32), "h0"),
              numpy_helper.from_array(rng.standard_normal((1, BATCH, HIDDEN)).astype(np.float32), "c0")]
    nodes = [
        # Both directions over a batch of two, the gates' sums clipped, Relu for z and r: Y.
        helper.make_node("GRU", ["X", "gW", "gR", "gB"], ["gru_y"], hidden_size=HIDDEN, direction="bidirectional",
                         clip=0.7, activations=["Relu", "Tanh", "Sigmoid", "Tanh"]),
        # A cell state past the clip (g = Sigmoid), which h reads unclipped as onnxruntime does: Y_h and Y_c.
        helper.make_node("LSTM", ["X", "lW", "lR", "lB", "lens", "h0", "c0"], ["", "lstm_h", "lstm_c"],
                         hidden_size=HIDDEN, clip=0.5, activations=["Sigmoid", "Sigmoid", "Tanh"]),
        helper.make_node("RNN", ["X", "rW", "rR", "rB", "", "h0"], ["", "rnn_h"], hidden_size=HIDDEN,
                         direction="reverse", activations=["Relu"]),
    ]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in
               (("gru_y", [SEQ, 2, BATCH, HIDDEN]), ("lstm_h", [1, BATCH, HIDDEN]), ("lstm_c", [1, BATCH, HIDDEN]),
                ("rnn_h", [1, BATCH, HIDDEN]))]
    graph = helper.make_graph(nodes, "recurrent", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                                                 [SEQ, BATCH, INPUT])], outputs,
                              _initializers(rng, "g", 3, 2) + _initializers(rng, "l", 4, 1)
                              + _initializers(rng, "r", 1, 1) + states)
    path = tmp_path / "recurrent.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    bundle = compile(path, "lowpower", tmp_path / "out")  # its self-test against onnxruntime
    assert bundle.selftest.passed


REFUSALS = [
    ("LSTM", {"input_forget": 1}, None, "input_forget=1"),
    ("GRU", {"activations": ["HardSigmoid", "Tanh"]}, None, "activations ['HardSigmoid'] are not converted"),
    ("GRU", {"layout": 1}, None, "layout 1 (batch first) is not converted"),
    ("RNN", {}, np.array([SEQ, SEQ - 1], np.int32), f"sequence_lens [{SEQ}, {SEQ - 1}] shorter than the sequence"),
]


@pytest.mark.parametrize(("op", "attrs", "lengths", "message"), REFUSALS, ids=[r[3].split()[0] for r in REFUSALS])
def test_forms_not_converted_are_refused_in_one_line(op, attrs, lengths, message):
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    x = relax.Var("x", relax.TensorType([SEQ, BATCH, INPUT], "float32"))
    w, r = (relax.const(np.zeros((1, gates * HIDDEN, n), np.float32)) for n in (INPUT, HIDDEN))
    inputs = [x, w, r, None, None if lengths is None else relax.const(lengths)]
    with pytest.raises(OperatorRefused, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        CONVERTERS[op](relax.BlockBuilder(), inputs, {"hidden_size": HIDDEN, **attrs})
