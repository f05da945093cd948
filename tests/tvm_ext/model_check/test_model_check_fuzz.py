"""Property-based fuzzing of the model check, bounded by example counts (not time).

Properties: for any byte-level mutation (flips, truncation) of the real shared models, of a tiny TFLite
model and of a small ONNX model, and for any randomly wired small ONNX graph, `check_model` either returns
facts or raises ModelError with one line naming the file; never another exception, never a hang.
The number of cases and the kinds of errors found are printed (visible with `pytest -s` or `-rA`).
"""

from __future__ import annotations

import collections
import tempfile
from pathlib import Path

import fuzz_corpus
import numpy as np
from fuzz_corpus import hang_guard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from tvm_ext.model_check import ModelError, check_model

BYTE_FUZZ_EXAMPLES = 400
GRAPH_FUZZ_EXAMPLES = 200
# Flips land in the first or last bytes this often: the tables of a flatbuffer or protobuf, not weights.
EDGE_BYTES = 4096

SEEDS: list[tuple[str, bytes]] = [(p.name, p.read_bytes()) for p in fuzz_corpus.shared_tflite_models()] + [
    ("tiny.tflite", fuzz_corpus.build_tflite(fuzz_corpus.TinyTflite())),
    ("small.onnx", fuzz_corpus.small_onnx_model().SerializeToString()),
]


def check_outcome(directory: Path, file_name: str, data: bytes) -> str:
    """Check the bytes as `file_name`; "passed" or the error kind. Fails on any other exception or a hang."""
    path = directory / file_name
    path.write_bytes(data)
    with hang_guard():
        try:
            check_model(path)
        except ModelError as error:
            text = str(error)
            assert "\n" not in text and text.startswith(f"{file_name}: "), text
            return error.kind.value
    return "passed"


@st.composite
def mutated_models(draw) -> tuple[str, bytes]:
    name, original = draw(st.sampled_from(SEEDS))
    data = bytearray(original)
    size = len(data)
    for _ in range(draw(st.integers(0, 8))):
        region = draw(st.sampled_from(["start", "end", "anywhere"]))
        low, high = {
            "start": (0, min(size, EDGE_BYTES)),
            "end": (max(0, size - EDGE_BYTES), size),
            "anywhere": (0, size),
        }[region]
        data[draw(st.integers(low, high - 1))] ^= draw(st.integers(1, 255))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, size))]
    return name, bytes(data)


OPS = ["Relu", "Add", "Mul", "Identity", "Conv", "MatMul", "Reshape", "NonZero", "Softmax", "Concat"]
DIMS = st.one_of(st.integers(-2, 4), st.just("N"))


@st.composite
def random_onnx_graphs(draw) -> bytes:
    """A small graph wired at random: names may be undefined, reused or cyclic; shapes may be dynamic."""
    n_inputs = draw(st.integers(0, 2))
    names = [f"x{i}" for i in range(n_inputs)]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, draw(st.lists(DIMS, min_size=0, max_size=4)))
        for n in names
    ]
    initializers = []
    for i in range(draw(st.integers(0, 2))):
        dims = draw(st.lists(st.integers(0, 4), max_size=3))
        count = draw(st.integers(0, 8))
        tensor = helper.make_tensor(f"w{i}", TensorProto.FLOAT, [count], np.ones(count, np.float32).tolist())
        tensor.dims[:] = dims  # dims drawn independently of the data: often a size mismatch
        initializers.append(tensor)
        names.append(f"w{i}")
    nodes = []
    n_nodes = draw(st.integers(0, 6))
    all_outputs = [f"t{i}" for i in range(n_nodes)]
    for i in range(n_nodes):
        defined = names + all_outputs[:i]
        # One node in four may read later outputs or unknown names (cycles, holes); the rest read
        # defined names.
        wild = draw(st.integers(0, 3)) == 0 or not defined
        pool = names + all_outputs + ["undefined"] if wild else defined
        ins = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        nodes.append(helper.make_node(draw(st.sampled_from(OPS)), ins, [all_outputs[i]], name=f"n{i}"))
    out_name = (
        all_outputs[-1]
        if all_outputs and draw(st.booleans())
        else draw(st.sampled_from(all_outputs + names or ["y"]))
    )
    outputs = [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, draw(st.lists(DIMS, max_size=4)))]
    graph = helper.make_graph(nodes, "fuzz", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", fuzz_corpus.ONNX_OPSET)])
    return model.SerializeToString()


def run_and_report(label: str, test, outcomes: collections.Counter, capsys) -> None:
    test()
    with capsys.disabled():
        total = sum(outcomes.values())
        print(f"\n{label}: {total} cases: " + ", ".join(f"{k} {n}" for k, n in outcomes.most_common()))
    assert total > 0


def test_byte_mutations_end_in_one_line_error_or_pass(capsys) -> None:
    outcomes: collections.Counter = collections.Counter()
    directory = Path(tempfile.mkdtemp(prefix="model_check_fuzz_"))

    @settings(
        max_examples=BYTE_FUZZ_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(mutated_models())
    def fuzz(model: tuple[str, bytes]) -> None:
        outcomes[check_outcome(directory, *model)] += 1

    run_and_report("byte fuzz", fuzz, outcomes, capsys)


def test_random_onnx_graphs_end_in_one_line_error_or_pass(capsys) -> None:
    outcomes: collections.Counter = collections.Counter()
    directory = Path(tempfile.mkdtemp(prefix="model_check_fuzz_"))

    @settings(
        max_examples=GRAPH_FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(random_onnx_graphs())
    def fuzz(data: bytes) -> None:
        outcomes[check_outcome(directory, "random.onnx", data)] += 1

    run_and_report("onnx graph fuzz", fuzz, outcomes, capsys)
