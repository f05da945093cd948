"""Models whose tensor and node names try to become C code (built at test time; shared by two test files).

`PAYLOAD_NAME(marker)` is an input name that, pasted as a kernel parameter name the way TVM's C code
generator pastes it, defines a constructor that runs `touch <marker>` when the self-test starts, and still
builds and self-tests (checked against the old code: it creates the marker, exit 0, "self-test PASS").
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from fuzz_corpus import FLOAT32, TinyTensor, TinyTflite

ONNX_OPSET = 17
HOSTILE_NAMES = ("*/ int x; /*", "/* open", 'say "hi" \\', "what??/ ??= ??(", "int", "main", "return")


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


def payload_onnx(stem: str, marker: str) -> bytes:
    """x[1,4] -> Relu -> y, the input named with the payload for the old kernel name `<stem>_relu`."""
    name = payload_name(f"{stem}_relu", f"{stem.upper()}_H", marker, "float* compute", "float* compute", "[i1];")
    graph = helper.make_graph(
        [helper.make_node("Relu", [name], ["y"], name="relu")], "g",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, (1, 4))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 4))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


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
