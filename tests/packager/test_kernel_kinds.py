"""Per-layer accounting (packager.kernel_kinds, packager.report): each call's kernel kind, its work in that kind's
unit, its instructions per unit against the kind's target on a DSP core, a mark on a call more than 1.5x above
it, a call of a MAC kind whose MACs were not counted shown as such, and the per-kind table of report.md."""

from __future__ import annotations

import pytest

from backends.cortex_m.kind_targets import DSP_TARGETS
from memory_planner.plan import ExecutionPlan, KernelCall, ModelOperator, Tensor, TensorRole
from packager.kernel_kinds import (CONVOLUTION, DATA_MOVEMENT, ELEMENTWISE, POOL, RECURRENT,
                                   kernel_kind, work_units)
from packager.report import layer_report


@pytest.mark.parametrize("operators, macs, kind", [
    (("CONV_2D", "LEAKY_RELU"), 100, CONVOLUTION),  # a fused epilogue: the MAC operator decides
    (("UNIDIRECTIONAL_SEQUENCE_LSTM",), 0, RECURRENT),  # a MAC kind whose MACs went uncounted stays one
    (("CONCATENATION", "LOGISTIC"), 0, ELEMENTWISE),
    (("MEAN",), 0, POOL),
    (("QLinearGlobalAveragePool",), 0, POOL),  # onnxruntime's pools: per byte read, as MEAN (was elementwise)
    (("RESHAPE", "TRANSPOSE"), 0, DATA_MOVEMENT),
])
def test_a_call_is_of_the_kind_of_its_operators(operators, macs, kind):
    assert kernel_kind(operators, macs) is kind


def test_elementwise_work_counts_each_fused_operator_over_the_bytes_written():
    """ADD + SPLIT + LOGISTIC over 48 bytes written: two elementwise operators (SPLIT moves data)."""
    assert work_units(ELEMENTWISE, ("ADD", "SPLIT", "LOGISTIC"), 0, 96, 48) == 96
    assert work_units(POOL, ("MAX_POOL_2D",), 0, 400, 100) == 400


def _plan() -> ExecutionPlan:
    """conv (128 MACs) -> LSTM whose MACs went uncounted -> reshape of 16 bytes."""
    tensors = {name: Tensor(name, (1, 16), "int8", role) for name, role in (
        ("x", TensorRole.INPUT), ("w", TensorRole.CONSTANT), ("h", TensorRole.INTERMEDIATE),
        ("g", TensorRole.INTERMEDIATE), ("y", TensorRole.OUTPUT))}
    calls = [KernelCall("m_conv", ("conv",), ("x", "w"), ("h",), operators=(ModelOperator("conv", "CONV_2D", 0),),
                        macs=128),
             KernelCall("m_lstm", ("lstm",), ("h", "w"), ("g",),
                        operators=(ModelOperator("lstm", "UNIDIRECTIONAL_SEQUENCE_LSTM", 1),), macs=0),
             KernelCall("m_reshape", ("reshape",), ("g",), ("y",), operators=(ModelOperator("r", "RESHAPE", 2),))]
    return ExecutionPlan("m", "m.tflite", "cortex-m4f", tensors, calls, ["x"], ["y"])


def test_a_call_over_its_kinds_target_is_marked_in_the_report_and_the_manifest():
    # conv: 256 / 128 = 2.0 per MAC, 1.33x its target 1.5 (not marked); reshape: 32 / 16 = 2.0 per byte, 2x 1.0.
    report = layer_report(_plan(), [256, 5000, 32], 5400, targets=DSP_TARGETS)
    conv, lstm, reshape = (call["kind"] for call in report.facts()["calls"])
    assert conv == {"name": "convolution", "unit": "MAC", "work": 128, "macs_counted": True,
                    "instructions_per_unit": 2.0, "target_instructions_per_unit": 1.5,
                    "times_target": pytest.approx(4 / 3), "over_target": False}
    assert (reshape["times_target"], reshape["over_target"]) == (2.0, True)
    assert (lstm["macs_counted"], lstm["instructions_per_unit"], lstm["over_target"]) == (False, None, False)
    text = report.markdown()
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()}
    assert "| convolution | 2.0 per MAC | 1.3x |" in rows["| 0"]
    assert "| recurrent cell | MACs not counted | - |" in rows["| 1"]
    assert "| data movement | 2.0 per output byte | **2.0x** |" in rows["| 2"]
    assert "| data movement | 1 | 32 | 0.6% | 2.0 per output byte | step 2: 2.0 | 1 | 1 | 0 |" in text
    assert "| recurrent cell | 1 | 5,000 | 92.6% | - | - | 2 | 0 | 1 |" in text
    summary = {kind["kind"]: kind for kind in report.facts()["kinds"]}
    assert summary["recurrent cell"]["calls_macs_not_counted"] == 1


def test_a_core_without_targets_reports_instructions_per_unit_unmarked():
    report = layer_report(_plan(), [256, 5000, 320], 5600)
    reshape = report.facts()["calls"][2]["kind"]
    assert (reshape["instructions_per_unit"], reshape["times_target"], reshape["over_target"]) == (20.0, None, False)


def test_a_float_call_has_no_target():
    """The targets are an integer kernel's: the same call writing float32 is measured but not marked."""
    plan = _plan()
    plan.tensors["y"] = Tensor("y", (1, 16), "float32", TensorRole.OUTPUT)
    reshape = layer_report(plan, [256, 5000, 320], 5600, targets=DSP_TARGETS).facts()["calls"][2]["kind"]
    assert (reshape["instructions_per_unit"], reshape["target_instructions_per_unit"], reshape["over_target"]) == (
        5.0, None, False)
