"""ONNX's backend node tests (scripts/onnx_conformance.py): no crash and no wrong output, in CI.

The whole suite (about 280 tests, minutes on two cores) is marked slow and runs in parts that xdist's workers
share, on tests written once per session; the selection and the comparison rules are checked quickly here too."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import session_folder, written_once

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "onnx_conformance.py"
_spec = importlib.util.spec_from_file_location("onnx_conformance", SCRIPT)
conformance = importlib.util.module_from_spec(_spec)
sys.modules["onnx_conformance"] = conformance  # its dataclasses look their module up there
_spec.loader.exec_module(conformance)


def test_a_test_belongs_to_the_family_of_its_longest_prefix():
    assert conformance.family_of("test_matmul_2d") == "matmul"
    assert conformance.family_of("test_matmulinteger") == "integer"
    assert conformance.family_of("test_convtranspose_pads") == "convtranspose"
    assert conformance.family_of("test_batchnorm_example_training_mode") is None
    assert conformance.family_of("test_acos") is None


def test_compare_uses_the_tests_tolerance_and_exact_integers():
    want = [np.array([1.0, np.nan], np.float32), np.array([3], np.int8)]
    assert conformance.compare([np.array([1.0005, np.nan], np.float32), np.array([3], np.int8)], want,
                               rtol=1e-3, atol=1e-7) is None
    assert "output 0" in conformance.compare([np.array([1.01, np.nan], np.float32), want[1]], want, 1e-3, 1e-7)
    assert "output 1" in conformance.compare([want[0], np.array([4], np.int8)], want, 1e-3, 1e-7)


def test_an_operand_given_as_a_graph_input_gets_an_initializer_variant():
    from onnx import TensorProto, helper

    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                                            helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])])
    model = helper.make_model(graph)
    assert conformance.constant_operand_inputs(model) == ["scales"]
    variant = conformance.with_initializers(model, {"scales": np.array([1, 1, 2, 2], np.float32)})
    assert [v.name for v in variant.graph.input] == ["x"]
    assert [(t.name, list(t.float_data) or t.raw_data != b"") for t in variant.graph.initializer] == [("scales", True)]


# The node tests run in parts (groups of families), so that xdist's two workers share them instead of one
# worker running all of them while the other runs out of work; together they are every family.
PARTS: tuple[tuple[str, ...], ...] = (  # of about 30 built tests each (refusals take little time)
    ("pooling",),
    ("elementwise",),
    ("activations", "batchnorm", "integer"),
    ("concat", "clip", "resize", "pad"),
    ("gemm", "convtranspose", "conv", "reshape", "quantize"),
    ("flatten", "transpose", "matmul", "qlinear", "squeeze", "slice", "reduce_mean", "abs", "cast"),
    ("indexing", "recurrent"),
)

# Matching tests at least, per family, the initializer variants (`__as_initializers`) included (188 of 281 node
# tests once QLinearConv and QLinearMatMul were converted, then 64 of their 79 variants: Pad, Reshape, Squeeze, Slice,
# ReduceMean and Resize with their operands as initializers; 26 index operator tests; Abs and Cast's float tests
# since float `fabs` has a C lowering); raise them, never lower them.
MATCH_FLOORS: dict[str, int] = {
    "activations": 27, "batchnorm": 2, "clip": 12, "concat": 12, "conv": 6, "convtranspose": 11, "elementwise": 36,
    "flatten": 9, "gemm": 11, "integer": 2, "matmul": 7, "pad": 5, "pooling": 41, "qlinear": 5, "quantize": 0,
    "reduce_mean": 8, "reshape": 9, "resize": 26, "slice": 7, "squeeze": 9, "transpose": 7, "abs": 1, "cast": 2,
    "indexing": 26,  # Gather*, Scatter*, OneHot (refused: TVM converts only a constant depth)
    "recurrent": 15,  # GRU, LSTM, RNN: all but layout 1 (batch first, which onnxruntime does not run) and a
    # sequence_lens given as a graph input (its initializer variant matches)
}


def test_the_parts_are_every_family_once():
    families = [family for part in PARTS for family in part]
    assert sorted(families) == sorted(conformance.FAMILIES)
    assert sorted(MATCH_FLOORS) == sorted(conformance.FAMILIES)
    assert sum(MATCH_FLOORS.values()) >= 281


@pytest.fixture(scope="session")
def node_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The selected node tests, written once per session by the first worker to ask (the script's
    --write-tests; collecting them from the onnx package takes most of a minute). Read-only."""
    def write(folder: Path) -> None:
        proc = subprocess.run([sys.executable, str(SCRIPT), "--write-tests", str(folder)], capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]

    return written_once(session_folder(tmp_path_factory, "onnx_node_tests"), "tests", write)


@pytest.fixture(scope="module")
def conformance_worker(tmp_path_factory: pytest.TempPathFactory):
    """One of the script's workers (`conformance.Worker`) for every part this pytest process runs: TVM is imported
    once per process, not once per part (some 3 CPU-s each, 7 parts)."""
    worker = conformance.Worker(tmp_path_factory.mktemp("conformance_worker") / "worker.log")
    yield worker
    worker.stop()


@pytest.mark.slow
@pytest.mark.parametrize("families", PARTS, ids="+".join)
def test_no_backend_node_test_crashes_or_gives_a_wrong_output(families, node_tests, conformance_worker, tmp_path,
                                                              capsys):
    selected = conformance.copy_written_tests(node_tests, tmp_path, lambda name, family: family in families)
    outcomes = conformance.run_on(tmp_path, selected, [conformance_worker])
    conformance.print_table(outcomes, 0.0, verbose=False)
    table = capsys.readouterr().out
    assert {result.family for result in outcomes} == set(families), table  # every family's tests ran
    assert not [result for result in outcomes if result.outcome in ("crash", "wrong")], table
    matches = Counter(result.family for result in outcomes if result.outcome == "match")
    below = {family: f"{matches[family]} < {MATCH_FLOORS[family]}" for family in families
             if matches[family] < MATCH_FLOORS[family]}
    assert not below, f"fewer matching tests than the floor: {below}\n{table}"


def test_the_command_runs_the_written_tests_of_a_family_and_writes_their_outcomes(node_tests, tmp_path):
    """The script's own command on the written tests (the parts above run its workers from this process): a
    family's outcomes in --json, exit 0 without a crash or a wrong output."""
    results = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "-j", "1", "--tests", str(node_tests), "--family", "abs",
                           "--json", str(results)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    outcomes = json.loads(results.read_text())
    assert {result["family"] for result in outcomes} == {"abs"}, proc.stdout
    assert sum(result["outcome"] == "match" for result in outcomes) >= MATCH_FLOORS["abs"], proc.stdout
