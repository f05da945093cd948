"""UNIDIRECTIONAL_SEQUENCE_LSTM (int8 activations and weights, int16 cell state): whole bundles, compiled for
lowpower from one-operator models this test builds, bit-exact with TFLite Micro over several invocations
(the hidden and cell states carry from one to the next) and after a reset; and the one-line refusals of what
TFLite Micro does not run either (peephole, projection, layer norm, CIFG, states of another batch)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

import tvm_ext  # noqa: E402
from lstm_models import (  # noqa: E402
    LAYER_NORM_INPUTS,
    PEEPHOLE_INPUTS,
    PROJECTION_INPUTS,
    LstmSpec,
    build_lstm_model,
)
from stateful_bundle_driver import run_with_reset_last, run_with_reset_last_on_qemu, tflm_invocations  # noqa: E402
from tvm_ext.compile import CompileError  # noqa: E402
from tvm_ext.transform import lower_quantized_to_integer  # noqa: E402
from tvm_ext.transform.int8.lowering import FlashBudget  # noqa: E402

INVOCATIONS = 3
MODEL = "lstm_layer"

SPECS = [
    LstmSpec(),  # batch-major, batch 1, 4 steps, 3 inputs, 5 units
    LstmSpec(batch=2, time=3, time_major=True, seed=1),
    LstmSpec(batch=2, time=5, inputs=4, units=3, seed=2),
    LstmSpec(batch=3, time=2, inputs=1, units=1, time_major=True, hidden_zero_point=0, input_zero_point=-128,
             seed=3),
    LstmSpec(time=6, cell_clip=0.5, seed=4),  # the cell state clipped (half the outputs differ without)
    LstmSpec(time=3, cell_scale=2.0**-15, seed=5),  # tanh's input shifted right (Q0.15 cell state)
    LstmSpec(batch=2, time=3, units=7, cell_scale=2.0**-8, time_major=True, seed=6),  # shifted left
]


def _id(spec: LstmSpec) -> str:
    layout = "time" if spec.time_major else "batch"
    return (f"{layout}-major-b{spec.batch}-t{spec.time}-i{spec.inputs}-u{spec.units}"
            f"-cell2^{int(np.log2(spec.cell_scale))}{f'-clip{spec.cell_clip}' if spec.cell_clip else ''}")


def _model(spec: LstmSpec, tmp_path: Path) -> Path:
    path = tmp_path / f"{MODEL}.tflite"
    path.write_bytes(build_lstm_model(spec))
    return path


@pytest.mark.parametrize("spec", SPECS, ids=_id)
def test_bundle_matches_tflm_over_invocations_and_after_a_reset(spec: LstmSpec, tmp_path: Path) -> None:
    """The self-test (TFLM's first invocation) is bit-identical; runs 2 and 3 carry both states as TFLM's
    invocations do, and a run after `<model>_reset()` is the first one again."""
    out = tmp_path / "lowpower"
    bundle = tvm_ext.compile(_model(spec, tmp_path), target="lowpower", out=out)
    assert bundle.selftest.passed and "bit-identical" in bundle.selftest.output, bundle.selftest.output
    rng = np.random.default_rng(spec.seed + 100)
    inputs = [rng.integers(-128, 128, spec.input_shape, dtype=np.int8) for _ in range(INVOCATIONS)]
    model = build_lstm_model(spec)
    expected = tflm_invocations(model, inputs) + tflm_invocations(model, inputs[:1])
    saturated = np.mean([np.isin(e, (-128, 127)).mean() for e in expected])
    assert saturated < 0.5, "the test model's scales leave too little of the output range to compare"
    assert not np.array_equal(expected[0], expected[1]) or not np.array_equal(inputs[0], inputs[1])
    runs = run_with_reset_last(out, MODEL, inputs + inputs[:1])
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")
    manifest = (out / "manifest.json").read_text()
    assert "state0" in manifest and "state1" in manifest  # the hidden and the cell state


def test_stacked_layers_each_keep_their_own_state(tmp_path: Path) -> None:
    """Two LSTMs in a row (the second reads the first's sequence): four states, one kernel each layer."""
    spec = LstmSpec(batch=2, time=3, units=4, seed=8)
    path = tmp_path / f"{MODEL}.tflite"
    path.write_bytes(build_lstm_model(spec, layers=2))
    out = tmp_path / "lowpower"
    bundle = tvm_ext.compile(path, target="lowpower", out=out)
    assert bundle.selftest.passed and "bit-identical" in bundle.selftest.output, bundle.selftest.output
    rng = np.random.default_rng(9)
    inputs = [rng.integers(-128, 128, spec.input_shape, dtype=np.int8) for _ in range(INVOCATIONS)]
    model = build_lstm_model(spec, layers=2)
    expected = tflm_invocations(model, inputs) + tflm_invocations(model, inputs[:1])
    runs = run_with_reset_last(out, MODEL, inputs + inputs[:1])
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")
    assert "state3" in (out / "manifest.json").read_text()


def test_the_state_carries_into_the_next_invocation() -> None:
    """The test's premise: with the same input twice, TFLM's second output differs from its first (the states
    after the first invocation are not the reset ones), so the comparisons above see the carried state."""
    spec = SPECS[0]
    x = np.random.default_rng(7).integers(-128, 128, spec.input_shape, dtype=np.int8)
    first, second = tflm_invocations(build_lstm_model(spec), [x, x])
    assert not np.array_equal(first, second)


REFUSED = [
    (LstmSpec(filled=(PEEPHOLE_INPUTS[0],)), "cell_to_input_weights tensor (input 9)", "peephole"),
    (LstmSpec(filled=(PROJECTION_INPUTS[0],)), "projection_weights tensor (input 16)", "projection"),
    (LstmSpec(filled=(PROJECTION_INPUTS[1],)), "projection_bias tensor (input 17)", "projection"),
    (LstmSpec(filled=(LAYER_NORM_INPUTS[2],)), "cell_layer_norm_coefficients tensor (input 22)", "layer norm"),
    (LstmSpec(absent=(1, 5)), "no input_to_input_weights tensor (input 1)", "without it"),
    (LstmSpec(declared_time_major=True), "output_state tensor (input 18) is [1, 5]", "not [4, 5]"),
]


@pytest.mark.parametrize("spec, tensor, why", REFUSED, ids=[tensor.split()[0] for _, tensor, _ in REFUSED])
def test_what_tflm_refuses_is_refused_in_one_line_naming_the_tensor(spec: LstmSpec, tensor: str, why: str,
                                                                     tmp_path: Path) -> None:
    from tflite_micro import runtime

    model = build_lstm_model(spec)
    with pytest.raises(RuntimeError, match="allocate"):  # the premise: TFLM refuses the model too
        runtime.Interpreter.from_bytes(model)
    with pytest.raises(CompileError) as refused:
        tvm_ext.compile(_model(spec, tmp_path), target="lowpower", out=tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "UNIDIRECTIONAL_SEQUENCE_LSTM" in message, message
    assert tensor in message and why in message, message
    assert not (tmp_path / "out").exists()


def test_a_float_lstm_is_refused_for_its_state() -> None:
    """TVM's float converter makes the state a constant: a bundle would forget it between runs."""
    from tvm_ext.model_check import operator_support

    why = operator_support.tflite_refusal("UNIDIRECTIONAL_SEQUENCE_LSTM", quantized=False)
    assert why is not None and "state" in why


# Shapes the interleaved dual MAC takes padded on a DSP core (units to whole tiles of four, inputs to whole groups of
# four: zero weights, zero-padded copies of the input row and hidden state) and whole, both layouts, two batch rows.
QEMU_SPECS = [
    SPECS[1],  # 5 units: one tile and one unit, padded to two tiles
    LstmSpec(batch=2, time=3, inputs=6, units=8, seed=11),  # whole tiles, inputs padded
    LstmSpec(time=4, inputs=9, units=6, time_major=True, seed=12),  # both padded
    LstmSpec(batch=2, time=3, inputs=8, units=12, seed=13),  # whole tiles and groups
]
# ... each with its weights widened to int16 (the emulated board's flash holds them), and one kept int8 where the
# profile's flash has no byte to spare (the FlashBudget refuses the widening): the int8 interleaved MAC
QEMU_CHOICES = [*((spec, True) for spec in QEMU_SPECS), (QEMU_SPECS[2], False)]


@pytest.mark.slow
@pytest.mark.parametrize("spec, widened", QEMU_CHOICES,
                         ids=lambda v: ("int16" if v else "int8") if isinstance(v, bool) else _id(v))
def test_bundle_on_cortex_m4f_uses_the_dual_mac_and_counts_its_macs(spec: LstmSpec, widened: bool, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same kernel built for a Cortex-M4F and run under QEMU: every run of several, and a run after
    `<model>_reset()`, equal TFLM's invocations; the gate products call the dual MAC over interleaved weights
    (padded to whole tiles and groups; widened to int16 unless no flash is spare: then the int8 helper) and the report
    counts every gate's MACs, not the padding's (four gates of an input and a recurrent product per unit, step and
    batch row)."""
    if not widened:  # the profile's flash holds no byte more than the model's constants
        monkeypatch.setattr(lower_quantized_to_integer, "FlashBudget", lambda spare_bytes: FlashBudget(0))
    out = tmp_path / "cortex-m4f"
    bundle = tvm_ext.compile(_model(spec, tmp_path), target="cortex-m4f", out=out)
    assert bundle.selftest.passed and bundle.selftest.where == "mps2-an386", bundle.selftest.output
    kernels = (out / f"{MODEL}_kernels.c").read_text()
    mac, other = ("s16x4", "s8x4") if widened else ("s8x4", "s16x4")
    assert f"{MODEL}_dual_mac_{mac}_interleaved(" in kernels, kernels
    assert f"{MODEL}_dual_mac_{other}_interleaved(" not in kernels and f"{MODEL}_dual_mac_s8x4(" not in kernels
    calls = json.loads((out / "manifest.json").read_text())["layer_report"]["calls"]
    assert [call["macs"] for call in calls] == [spec.batch * spec.time * 4 * spec.units * (spec.inputs + spec.units)]
    rng = np.random.default_rng(spec.seed + 100)
    inputs = [rng.integers(-128, 128, spec.input_shape, dtype=np.int8) for _ in range(INVOCATIONS)]
    model = build_lstm_model(spec)
    expected = tflm_invocations(model, inputs) + tflm_invocations(model, inputs[:1])
    runs = run_with_reset_last_on_qemu(out, MODEL, inputs + inputs[:1])
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")


@pytest.mark.slow
def test_bundle_on_cortex_m55_calls_the_rows_mac_on_units_padded_to_whole_tiles(tmp_path: Path) -> None:
    """Built for a Helium core (6 units padded to two tiles by zero rows, 9 inputs as they are): its self-test under
    QEMU (TFLM's first invocation, every step's states carried) is bit-identical; each gate's products call the rows
    MAC, no inlined dual MAC left, and the report counts the layer's MACs, not the padding's."""
    spec = QEMU_SPECS[2]
    out = tmp_path / "cortex-m55"
    bundle = tvm_ext.compile(_model(spec, tmp_path), target="cortex-m55", out=out)
    assert bundle.selftest.passed and bundle.selftest.where == "mps3-an547", bundle.selftest.output
    kernels = (out / f"{MODEL}_kernels.c").read_text()
    assert kernels.count(f"{MODEL}_dual_mac_rows_s8(") == 8 and f"{MODEL}_dual_mac_s8x4(" not in kernels, kernels
    calls = json.loads((out / "manifest.json").read_text())["layer_report"]["calls"]
    assert [call["macs"] for call in calls] == [spec.batch * spec.time * 4 * spec.units * (spec.inputs + spec.units)]
