"""`tvm-ext-compile MODEL --analyze --target X|all`: the operators and their support before any TVM work, then per
profile MACs, bytes, fit and estimated times, with nothing built or written; unsupported operators are listed and
exit 2, not a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import fuzz_corpus
from conftest import run_cli
from tvm_ext.model_check import check_model_data


def _gemm_onnx(path: Path, columns: int) -> Path:
    """x[1,64] -> Gemm(64 -> columns) -> y: 256 x columns bytes of float weights."""
    w = helper.make_tensor("w", TensorProto.FLOAT, (64, columns), np.ones(64 * columns, np.float32))
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], name="fc")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 64))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, columns))], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _qdq_gemm_onnx(path: Path, columns: int) -> Path:
    """x[1,64] float -> QuantizeLinear -> DequantizeLinear -> Gemm(64 -> columns; weights int8 through a
    DequantizeLinear, per tensor) -> y, onnxruntime's QDQ form: 64 x columns bytes of int8 weights, four times as
    many as float32 once dequantized."""
    scale = lambda name, value: helper.make_tensor(name, TensorProto.FLOAT, (), [value])  # noqa: E731
    zero = lambda name: helper.make_tensor(name, TensorProto.INT8, (), [0])  # noqa: E731
    w = helper.make_tensor("w_q", TensorProto.INT8, (64, columns), np.ones(64 * columns, np.int8))
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["x_q"]),
             helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zero"], ["x_dq"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w_dq"]),
             helper.make_node("Gemm", ["x_dq", "w_dq"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 64))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, columns))],
                              [w, scale("x_scale", 0.05), zero("x_zero"), scale("w_scale", 0.01), zero("w_zero")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_check_counts_a_qdq_models_weights_as_stored_quantized_not_dequantized_too(tmp_path: Path) -> None:
    """The weight bytes the fit checks use before the passes are the int8 initializer's, not the int8 plus the
    float32 copy its DequantizeLinear folds into (which the bundle never stores): 64 x 2,048 weights."""
    model = _qdq_gemm_onnx(tmp_path / "qdq.onnx", 2_048)
    facts = check_model_data("qdq.onnx", model.read_bytes())
    assert 64 * 2_048 <= facts.weight_bytes < 64 * 2_048 + 64


@pytest.mark.slow
def test_analyze_does_not_refuse_a_qdq_model_whose_int8_weights_fit_the_flash(tmp_path: Path) -> None:
    """131,072 B of int8 weights fit cortex-m0plus's 262,144 B of flash; with their float32 copy counted too
    (655,360 B) the check alone refused them before the passes ran."""
    model = _qdq_gemm_onnx(tmp_path / "qdq.onnx", 2_048)
    proc = run_cli(str(model), "--analyze", "--target", "cortex-m0plus", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("cortex-m0plus "))
    assert row[-2] == "yes", row


def test_check_records_unsupported_operators_instead_of_refusing() -> None:
    data = fuzz_corpus._unsupported_ops().SerializeToString()
    facts = check_model_data("ops.onnx", data, refuse_unsupported=False)
    refused = {op.layer: op.refusal for op in facts.unsupported}
    assert set(refused) == {"nonzero", "vendor"}
    assert "data-dependent" in refused["nonzero"] and "com.vendor" in refused["vendor"]
    assert [op.refusal for op in facts.operators if op.layer == "relu"] == [None]


def test_unsupported_operators_are_listed_with_exit_2_before_any_import(tmp_path: Path) -> None:
    model = tmp_path / "ops.onnx"
    model.write_bytes(fuzz_corpus._unsupported_ops().SerializeToString())
    proc = run_cli(str(model), "--analyze", "--target", "cortex-m4f")
    assert proc.returncode == 2, proc.stderr
    assert "UNSUPPORTED: NonZero (data-dependent output shape" in proc.stdout
    assert "Relu" in proc.stdout and "supported" in proc.stdout
    assert "[tvm_ext] import" not in proc.stdout  # stopped after the check: no import, no passes
    assert proc.stderr.count("\n") == 1 and "unsupported operators: NonZero" in proc.stderr
    assert sorted(tmp_path.iterdir()) == [model]  # nothing written


def test_analyze_one_profile_gives_every_call_and_the_totals(tmp_path: Path, cli_in_process) -> None:
    proc = cli_in_process("--example", "--analyze", "--target", "cortex-m4f", "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for op in ("Conv", "Relu", "MaxPool", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"):
        assert f"operator   {op} " in out
    assert "Per kernel call on cortex-m4f" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("cortex-m4f ")}
    cells = rows["cortex-m4f"].split()
    assert cells[1] == "173,712" and cells[-2] == "yes" and float(cells[-1]) > 0  # MACs, fits, est. ms
    assert "estimate, not a measurement" in out
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.slow
def test_analyze_all_profiles_in_one_table(tmp_path: Path, cli_in_process) -> None:
    """400,000 weight bytes: over cortex-m0plus's 262,144 B of flash, known from the check alone (no passes for
    it), under every other built-in profile's."""
    import target

    model = _gemm_onnx(tmp_path / "wide.onnx", 1_562)
    proc = cli_in_process(str(model), "--analyze", "--target", "all", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines()
            if line.split() and line.split()[0] in target.profile_names()}
    assert set(rows) == set(target.profile_names())
    assert rows["cortex-m0plus"][4] == "-" and rows["cortex-m0plus"][-2] == "NO"  # arena never planned
    assert "[tvm_ext] cortex-m0plus" not in proc.stdout
    assert ("weights need 399,872 B of flash (code not counted: not built and measured on an emulated board) "
            "but cortex-m0plus has 262,144 B") in proc.stdout
    for name in set(rows) - {"cortex-m0plus"}:
        assert rows[name][1] == "99,968" and rows[name][-2] == "yes", rows[name]
    assert rows["lowpower"][-1] == "-" and float(rows["cortex-m7"][-1]) > 0  # a time only with a cycle table


@pytest.mark.slow
def test_analyze_takes_the_patches_a_compile_would(shared_models: Path, cli_in_process) -> None:
    """person_detect: `--patches auto` on cortex-m0plus (32 KB of SRAM, 37,632 B of arena layer by layer) analyses
    the first plan whose RAM fits, and says which; a grid on cortex-m4f is analysed as asked; a grid the model has
    no chain for is the command's one-line error, as for a compile."""
    model = str(shared_models / "tflm" / "person_detect.tflite")

    def rows(proc, profile: str) -> tuple[list[str], list[str]]:
        lines = proc.stdout.splitlines()
        return (next(line.split() for line in lines if line.startswith(f"{profile} ")),
                [line for line in lines if line.startswith(f"{profile}: ")])

    analyze = cli_in_process
    auto = analyze(model, "--analyze", "--target", "cortex-m0plus", "--patches", "auto", "--jobs", "1")
    assert auto.returncode == 0, auto.stderr
    row, notes = rows(auto, "cortex-m0plus")
    assert row[-2] == "yes" and int(row[4].replace(",", "")) < 32_768, row
    # the plans of fewest extra MACs: streamed bands
    assert len(notes) == 1 and " streamed bands of window stage " in notes[0], notes
    assert "arena 37,632 B layer by layer -> " in notes[0]
    grid = analyze(model, "--analyze", "--target", "cortex-m4f", "--patches", "2x2", "--jobs", "1")
    assert grid.returncode == 0, grid.stderr
    row, notes = rows(grid, "cortex-m4f")
    assert int(row[4].replace(",", "")) < 37_632 and len(notes) == 1 and notes[0].startswith("cortex-m4f: 2x2 patches")
    wrong = analyze(model, "--analyze", "--target", "cortex-m4f", "--patches", "1x500", "--jobs", "1")
    assert wrong.returncode == 2 and len(wrong.stderr.splitlines()) == 1
    assert "--patches 1x500: the model has no chain of windowed NHWC stages" in wrong.stderr
