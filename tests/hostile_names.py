"""Models whose tensor and node names try to become C code, or to take over the terminal, the report or the
error line (built at test time; shared by several test files).

`PAYLOAD_NAME(marker)` is an input name that, pasted as a kernel parameter name the way TVM's C code
generator pastes it, defines a constructor that runs `touch <marker>` when the self-test starts, and still
builds and self-tests (checked against the old code: it creates the marker, exit 0, "self-test PASS").
`TERMINAL_ESCAPES` and `FORGED_LINE` are the text a name uses to take over a terminal or to end the one
error line and start a second one of its own.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from fuzz_corpus import FLOAT32, TinyTensor, TinyTflite
from tflite_builder import Model, Operator, Options, Quantization, Tensor

ONNX_OPSET = 17
HOSTILE_NAMES = ("*/ int x; /*", "/* open", 'say "hi" \\', "what??/ ??= ??(", "int", "main", "return")
# An OSC that sets the terminal's title, a clear screen, red text, a right-to-left override and a NUL.
TERMINAL_ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\u202e\x00"
# A line break and a line that reads as a verdict on another model file.
FORGED_LINE = "\nmodel.tflite: compiled, nothing wrong here"
# Names that XML 1.0, Markdown and a terminal each cannot take as they are: markup, entities, a CDATA end,
# a comment start, NUL, ESC, BEL, C1's CSI, a right-to-left override, a noncharacter, line breaks and a tab.
MARKUP_NAMES = ("a\x00b\x1b[2J<&\"'>\x07", "c\u202ed\ufffe\n\r\tz\x9b",
                "]]>--&amp;<!-- $x$ *y* `z` | \x1b]8;;http://x\x07")


def payload_name(kernel: str, guard: str, marker: str, params: str, model_params: str, use_tail: str) -> str:
    """An input name `a...` that turns kernel `kernel` (of the bundle whose header guard is `guard`) into a
    host command once pasted as its first parameter's name. `params` are the kernel's other parameters as
    TVM prints them, `model_params` the same as the entry function calls them (inputs const), `use_tail`
    what follows the name where the body reads it. Three pastes (prototype, definition, body) take three
    branches; a decoy definition line in `#if 0` gives the internal header a prototype."""
    return "\n".join([
        "a", "#ifndef S1", "#define S1", f", {params});", "int system(const char*);",
        f'__attribute__((constructor)) static void pwn(void) {{ system("touch {marker}"); }}',
        "#if 0", f"void {kernel}_real(", f"#ifdef {guard}", f"const float* a, {model_params}", "#else",
        f"float* a, {params}", "# endif", f"#define {kernel} {kernel}_real", ") {", "# endif",
        "#elif !defined S2", "#define S2", f", {params}) {{", "#else", use_tail, "# endif", "#undef Z",
        "#define Z ",
    ])


def relu_onnx(input_name: str = "x", node_name: str = "relu", elem_type: int = TensorProto.FLOAT) -> bytes:
    """x[1,4] -> Relu -> y, its input and node named as given, of ONNX element type `elem_type`."""
    graph = helper.make_graph(
        [helper.make_node("Relu", [input_name], ["y"], name=node_name)], "g",
        [helper.make_tensor_value_info(input_name, elem_type, (1, 4))],
        [helper.make_tensor_value_info("y", elem_type, (1, 4))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def payload_onnx(stem: str, marker: str) -> bytes:
    """x[1,4] -> Relu -> y, the input named with the payload for the old kernel name `<stem>_relu`."""
    return relu_onnx(payload_name(f"{stem}_relu", f"{stem.upper()}_H", marker, "float* compute", "float* compute",
                                  "[i1];"))


def colliding_onnx() -> onnx.ModelProto:
    """Three inputs `in-a`, `in.a`, `in_a` (one name after any mapping to identifiers), each a hostile
    name elsewhere: Add(in-a, in.a) -> Mul(in_a) -> Relu -> two outputs, nodes named hostile too."""
    inputs = ["in-a", "in.a", "in_a"]
    mid, prod = HOSTILE_NAMES[0], HOSTILE_NAMES[2]
    nodes = [
        helper.make_node("Add", inputs[:2], [mid], name=HOSTILE_NAMES[1]),
        helper.make_node("Mul", [mid, inputs[2]], [prod], name=HOSTILE_NAMES[3]),
        helper.make_node("Relu", [prod], ["int"], name="return"),
        helper.make_node("Neg", [prod], ["main"], name="what??/"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, (1, 4)) for n in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, (1, 4)) for n in ("int", "main")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    onnx.checker.check_model(model)
    return model


def payload_tflite(stem: str, marker: str) -> TinyTflite:
    """The tiny FULLY_CONNECTED model, its input named with the payload for the old kernel `<stem>_fused_matmul_add`."""
    spec = TinyTflite()
    params = "float* param_0, float* param_1, float* T_add_intermediate"
    model_params = "const float* param_0, const float* param_1, float* T_add_intermediate"
    spec.tensors[0].name = payload_name(f"{stem}_fused_matmul_add", f"{stem.upper()}_H", marker, params,
                                        model_params, "[k] * param_0[((k * 3) + i1)]));")
    return spec


def hostile_tflite() -> TinyTflite:
    """The tiny FULLY_CONNECTED model with every tensor named badly: a newline payload, comment ends,
    quotes, backslashes, trigraphs, a keyword and bytes that are not UTF-8."""
    spec = TinyTflite()
    spec.tensors = [
        TinyTensor("in\n#include <stdio.h>\n*/ \"x\\\" ??/", (1, 4), FLOAT32, 0),
        TinyTensor(b"return\xff\xfe??=", (3, 4), FLOAT32, 1),  # bytes: written as they are, not UTF-8
        TinyTensor("/* int */", (3,), FLOAT32, 2),
        TinyTensor("out ??= \u00e9 return", (1, 3), FLOAT32, 0),
    ]
    return spec


def runtime_refused_onnx(node_name: str) -> bytes:
    """int16 x[1,4] -> Relu -> y, the node named `node_name`: our check and TVM take it; onnxruntime has no int16
    Relu kernel and refuses it in a message that quotes the node's name."""
    return relu_onnx(node_name=node_name, elem_type=TensorProto.INT16)


def matmul_chain_onnx(names: tuple[str, ...]) -> bytes:
    """x[1,8] -> MatMul -> ... -> y, one MatMul per name (node and output named so): each kernel call a layer of
    its own, each intermediate an arena buffer labelled with its name."""
    values = ["x", *names[:-1], "y"]
    nodes = [helper.make_node("MatMul", [values[i], f"w{i}"], [values[i + 1]], name=name)
             for i, name in enumerate(names)]
    weights = [numpy_helper.from_array(np.eye(8, dtype=np.float32), f"w{i}") for i in range(len(names))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 8))], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def unlowerable_softmax_tflite(output_name: str) -> Model:
    """A 16x8 SOFTMAX whose output scale (1/256) TFLite Micro does not take: the model check passes it, the
    int16 lowering refuses it naming the layer, the output `output_name`."""
    return Model([Tensor("in", (1, 10), "int16", Quantization((0.0005,), (0,))),
                  Tensor(output_name, (1, 10), "int16", Quantization((1 / 256,), (0,)))],
                 [Operator("SOFTMAX", (0,), (1,), Options("SoftmaxOptions", {"Beta": 1.0}), version=3)], (0,), (1,))
