"""Models whose indices come from a model input, one per index operator family (ONNX and TFLite), with an
input that holds an index of 1000 on a size-10 axis and one whose indices are all valid; and the C driver
that runs a bundle of such a model on both.

The driver replaces a bundle's selftest.c, so the bundle's own build rules build it (on the host, or as the
self-test ELF of a Cortex-M bundle). It puts the output buffer between two canaries, runs the model on the
bad input (it must return <MODEL>_ERROR_INDEX_OUT_OF_RANGE and leave the output and both canaries as they
were), then on the good input (<MODEL>_OK, the reference runtime's output, canaries intact); it prints one
line and returns 0 when all of that holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from packager.c_types import c_type_of
from tflite_builder import Model, Operator, Options, Tensor, build

BAD_INDEX = 1000
AXIS = 10  # the size of every indexed axis


@dataclass(frozen=True)
class IndexCase:
    """A model family: `write(folder) -> path` writes the model, `input_names` its inputs, `good` and `bad`
    the inputs' values (in model order) with valid indices and with one index of BAD_INDEX."""

    name: str
    write: Callable[[Path], Path]
    input_names: tuple[str, ...]
    good: tuple[np.ndarray, ...]
    bad: tuple[np.ndarray, ...]


def _onnx(folder: Path, name: str, node, inputs: list, output, initializers=()) -> Path:
    graph = helper.make_graph([node], name, inputs, [output], list(initializers))
    path = folder / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    return path


def _value(name: str, elem_type: int, shape: tuple[int, ...]):
    return helper.make_tensor_value_info(name, elem_type, list(shape))


_TABLE = np.arange(AXIS * 4, dtype=np.float32).reshape(AXIS, 4) / 8


def write_onnx_gather(folder: Path) -> Path:
    """ONNX Gather of rows of a constant table at indices from the input."""
    return _onnx(folder, "gather", helper.make_node("Gather", ["table", "i"], ["y"], name="g", axis=0),
                 [_value("i", TensorProto.INT64, (3,))], _value("y", TensorProto.FLOAT, (3, 4)),
                 [numpy_helper.from_array(_TABLE, "table")])


def write_onnx_gather_elements(folder: Path) -> Path:
    return _onnx(folder, "gather_elements", helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1),
                 [_value("x", TensorProto.FLOAT, (2, AXIS)), _value("i", TensorProto.INT64, (2, 3))],
                 _value("y", TensorProto.FLOAT, (2, 3)))


def write_onnx_gather_nd(folder: Path) -> Path:
    return _onnx(folder, "gather_nd", helper.make_node("GatherND", ["x", "i"], ["y"]),
                 [_value("x", TensorProto.FLOAT, (AXIS, AXIS, 4)), _value("i", TensorProto.INT64, (3, 2))],
                 _value("y", TensorProto.FLOAT, (3, 4)))


def write_onnx_scatter_elements(folder: Path) -> Path:
    return _onnx(folder, "scatter_elements", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1),
                 [_value("x", TensorProto.FLOAT, (2, AXIS)), _value("i", TensorProto.INT64, (2, 3)),
                  _value("u", TensorProto.FLOAT, (2, 3))], _value("y", TensorProto.FLOAT, (2, AXIS)))


def write_onnx_scatter_nd(folder: Path) -> Path:
    return _onnx(folder, "scatter_nd", helper.make_node("ScatterND", ["x", "i", "u"], ["y"]),
                 [_value("x", TensorProto.FLOAT, (AXIS, 4)), _value("i", TensorProto.INT64, (3, 1)),
                  _value("u", TensorProto.FLOAT, (3, 4))], _value("y", TensorProto.FLOAT, (AXIS, 4)))


def write_tflite_gather(folder: Path) -> Path:
    """TFLite GATHER of rows of a constant table at int32 indices from the input."""
    model = Model([Tensor("table", (AXIS, 4), "float32", data=_TABLE), Tensor("i", (3,), "int32"),
                   Tensor("y", (3, 4), "float32")],
                  [Operator("GATHER", (0, 1), (2,), Options("GatherOptions", {"Axis": 0}))], (1,), (2,))
    path = folder / "gather.tflite"
    path.write_bytes(build(model))
    return path


def _floats(*shape: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).integers(-64, 64, shape) / 8).astype(np.float32)


def _with(values: np.ndarray, position: tuple[int, ...], value: int) -> np.ndarray:
    changed = values.copy()
    changed[position] = value
    return changed


_GATHER_GOOD = np.array([-1, 0, 9], np.int64)  # ONNX: -1 is the last row
_ELEMENTS_GOOD = np.array([[0, -1, 5], [9, -10, 2]], np.int64)
_ND_GOOD = np.array([[0, 1], [9, -1], [4, 5]], np.int64)
_SCATTER_GOOD = np.array([[0, -1, 5], [9, 2, 3]], np.int64)  # distinct per row: no order question
_SCATTER_ND_GOOD = np.array([[1], [-1], [4]], np.int64)
_TFLITE_GOOD = np.array([0, 9, 3], np.int32)

INDEX_CASES = [
    IndexCase("onnx-Gather", write_onnx_gather, ("i",), (_GATHER_GOOD,), (_with(_GATHER_GOOD, (1,), BAD_INDEX),)),
    IndexCase("onnx-GatherElements", write_onnx_gather_elements, ("x", "i"), (_floats(2, AXIS), _ELEMENTS_GOOD),
              (_floats(2, AXIS), _with(_ELEMENTS_GOOD, (1, 2), BAD_INDEX))),
    IndexCase("onnx-GatherND", write_onnx_gather_nd, ("x", "i"), (_floats(AXIS, AXIS, 4), _ND_GOOD),
              (_floats(AXIS, AXIS, 4), _with(_ND_GOOD, (2, 1), BAD_INDEX))),
    IndexCase("onnx-ScatterElements", write_onnx_scatter_elements, ("x", "i", "u"),
              (_floats(2, AXIS), _SCATTER_GOOD, _floats(2, 3, seed=1)),
              (_floats(2, AXIS), _with(_SCATTER_GOOD, (1, 0), BAD_INDEX), _floats(2, 3, seed=1))),
    IndexCase("onnx-ScatterND", write_onnx_scatter_nd, ("x", "i", "u"), (_floats(AXIS, 4), _SCATTER_ND_GOOD, _floats(3, 4, seed=1)),
              (_floats(AXIS, 4), _with(_SCATTER_ND_GOOD, (2, 0), BAD_INDEX), _floats(3, 4, seed=1))),
    IndexCase("tflite-GATHER", write_tflite_gather, ("i",), (_TFLITE_GOOD,), (_with(_TFLITE_GOOD, (1,), BAD_INDEX),)),
]


# ---------------------------------------------------------------------------------------------------------
# The driver.

_LITERAL_SUFFIX = {"int64": "INT64_C({})", "uint64": "UINT64_C({})"}


def _literal(value, dtype: str) -> str:
    if dtype == "float32":
        return f"{float(value).hex()}f"
    return _LITERAL_SUFFIX.get(dtype, "{}").format(int(value))


def _array(name: str, values: np.ndarray) -> str:
    dtype = str(values.dtype)
    body = ", ".join(_literal(v, dtype) for v in values.reshape(-1))
    return f"static const {c_type_of(dtype)} {name}[{values.size}] = {{{body}}};"


def _run_call(model: str, inputs: list[str], output: str, single: bool) -> str:
    if single:
        return f"{model}_run({inputs[0]}, {output})"
    fields = ", ".join(inputs)
    return f"run_with({fields}, {output})"


def driver_source(model: str, good: tuple[np.ndarray, ...], bad: tuple[np.ndarray, ...], expected: np.ndarray) -> str:
    """selftest.c's replacement for model `model` (one output, inputs outside the arena): see the module's
    docstring. `expected` is the output for `good`."""
    M = model.upper()
    single = len(good) == 1
    out_type = c_type_of(str(expected.dtype))
    arrays = [_array(f"good{k}", x) for k, x in enumerate(good)] + [_array(f"bad{k}", x) for k, x in enumerate(bad)]
    arrays.append(_array("expected", expected))
    helper_fn = []
    if not single:
        params = ", ".join(f"const {c_type_of(str(x.dtype))}* in{k}" for k, x in enumerate(good))
        fields = ", ".join(f"in{k}" for k in range(len(good)))
        helper_fn = [
            f"static int run_with({params}, {out_type}* out)",
            "{",
            f"  const {model}_inputs_t inputs = {{{fields}}};",
            f"  {model}_outputs_t outputs;",
            "  outputs.output0 = out;",
            f"  return {model}_run(&inputs, &outputs);",
            "}",
        ]
    bad_run = _run_call(model, [f"bad{k}" for k in range(len(bad))], "guarded.output", single)
    good_run = _run_call(model, [f"good{k}" for k in range(len(good))], "guarded.output", single)
    lines = [
        "/* Index-check driver (tests/index_models.py): an index outside its axis, then valid indices. */",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        f'#include "{model}.h"',
        "",
        "#define CANARY 0x5Au",
        "static struct {",
        "  unsigned char before[64];",
        f"  {out_type} output[{M}_OUTPUT0_ELEMENTS];",
        "  unsigned char after[64];",
        "} guarded;",
        *arrays,
        "",
        *helper_fn,
        "",
        "/* Whether every byte of [begin, end) still holds the canary. */",
        "static int intact(const unsigned char* begin, const unsigned char* end)",
        "{",
        "  for (; begin < end; ++begin) {",
        "    if (*begin != CANARY) {",
        "      return 0;",
        "    }",
        "  }",
        "  return 1;",
        "}",
        "",
        "int main(void)",
        "{",
        "  const unsigned char* all = (const unsigned char*)&guarded;",
        "  int bad_status;",
        "  int good_status;",
        "  memset(&guarded, (int)CANARY, sizeof guarded);",
        f"  bad_status = {bad_run};",
        "  if (!intact(all, all + sizeof guarded)) {",
        '    printf("index check: the run with a bad index wrote into the output or its neighbours\\n");',
        "    return 1;",
        "  }",
        f"  good_status = {good_run};",
        "  if (!intact(guarded.before, guarded.before + sizeof guarded.before)",
        "      || !intact(guarded.after, guarded.after + sizeof guarded.after)) {",
        '    printf("index check: the valid run wrote outside its output\\n");',
        "    return 1;",
        "  }",
        '  printf("index check: bad index status %d, valid status %d, output %s\\n", bad_status, good_status,',
        '         memcmp(guarded.output, expected, sizeof expected) == 0 ? "as expected" : "WRONG");',
        f"  return bad_status != {M}_ERROR_INDEX_OUT_OF_RANGE || good_status != {M}_OK",
        "         || memcmp(guarded.output, expected, sizeof expected) != 0;",
        "}",
        "",
    ]
    return "\n".join(lines)
