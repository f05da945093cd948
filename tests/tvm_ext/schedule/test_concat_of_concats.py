"""A concat of concats, fused with the activations it joins, is one select per element
(tvm_ext/schedule/kernel_schedule.py `_reads_each_element_once`).

A concat iterates more times than each of its inputs writes elements, which the schedule took for a broadcast: each
producer was computed at the concat's innermost loop into a one-element buffer written under one condition and read
under another, and GCC's -Wmaybe-uninitialized refused the C (session 20 worked around it in the ONNX recurrent
converter). A concat reads each element of its inputs once, so they are inlined into its selects."""

from __future__ import annotations

from onnx import TensorProto, helper

from tvm_ext.compile import compile

PIECE = [1, 1, 2, 5]


def test_nested_concats_of_activations_build_and_equal_onnxruntime(tmp_path):
    names = ["a", "b", "c", "d"]
    nodes = [helper.make_node("Relu", [name], [name + "_relu"]) for name in names]
    nodes += [helper.make_node("Concat", ["a_relu", "b_relu"], ["ab"], axis=1),
              helper.make_node("Concat", ["c_relu", "d_relu"], ["cd"], axis=1),
              helper.make_node("Concat", ["ab", "cd"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "concat_of_concats",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, PIECE) for name in names],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 2, 5])])
    path = tmp_path / "concats.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    bundle = compile(path, "lowpower", tmp_path / "out")  # built with -Werror, self-tested against onnxruntime
    assert bundle.selftest.passed
    kernels_c = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    assert "_ptr[" not in kernels_c, kernels_c  # no one-element buffer of a producer computed at the concat
