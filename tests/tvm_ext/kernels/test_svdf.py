"""SVDF: our integer kernels, built for the host, against TFLite Micro on one-operator models this test builds,
over several invocations (the state carries from one to the next)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
from tvm import te  # noqa: E402

import fuzz_corpus  # noqa: E402
import tvm_ext  # noqa: E402
from stateful_bundle_driver import run_with_reset_last, run_with_reset_last_on_qemu, tflm_invocations  # noqa: E402
from svdf_models import SvdfSpec, build_svdf_model, svdf_tensors  # noqa: E402
from tvm_ext.kernels import Rounding  # noqa: E402
from tvm_ext.kernels.extern_mac import interleave_weights, lane_order, padded_to_tiles, rows_padded  # noqa: E402
from tvm_ext.kernels.svdf import (  # noqa: E402
    svdf_feature_multiplier,
    svdf_feature_offsets,
    svdf_output,
    svdf_output_rows,
    svdf_state_update,
    svdf_time_multiplier,
    svdf_time_offsets,
    svdf_unit_rows,
)
from tvm_ext.transform import lower_quantized_to_integer  # noqa: E402
from tvm_ext.transform.int8.lowering import FlashBudget  # noqa: E402

INVOCATIONS = 3


def _host_function(build, arrays: list[np.ndarray]):
    """``build(*placeholders)`` built for llvm, as a numpy function of arrays shaped like ``arrays``."""
    placeholders = [te.placeholder(a.shape, str(a.dtype), name=f"in{i}") for i, a in enumerate(arrays)]
    out = build(*placeholders)
    lib = tvm.tirx.build(tvm.IRModule({"main": te.create_prim_func([*placeholders, out])}), target="llvm")

    def run(*values: np.ndarray) -> np.ndarray:
        dev = tvm.cpu()
        result = tvm.runtime.tensor(np.zeros([int(d) for d in out.shape], str(out.dtype)), dev)
        lib["main"](*(tvm.runtime.tensor(v, dev) for v in values), result)
        return result.numpy()

    return run


def _ours(spec: SvdfSpec, inputs: list[np.ndarray], fold: bool = False, interleaved: bool = False,
          unit_rows: bool = False, lanes: bool = False, rows: bool = False) -> list[np.ndarray]:
    """The outputs of our two kernels over ``inputs``, the state starting at its zero point as TFLM resets it;
    with ``fold``, the state zero point folded into the bias as the lowering folds it (svdf_time_offsets); with
    ``interleaved``, the feature weights interleaved and padded to whole tiles and groups as a DSP core's lowering
    gives them (every filter's product in one reduction block); with ``rows``, in TFLite's rows, the filters padded
    to whole tiles as a Helium core's lowering gives them (every filter's product in one reduction block too); with
    ``unit_rows``, the time product and its
    requantization unit after unit as a DSP core's lowering writes them (``svdf_output_rows``); with ``lanes`` too,
    their int8 time weights widened to int16 in SXTB16's lane order (``lane_order``)."""
    data, feature, time, bias, state, output = svdf_tensors(spec)
    feature_multiplier, feature_shift = svdf_feature_multiplier(data.scale, feature.scale, state.scale,
                                                                Rounding.DOUBLE)
    time_multiplier, time_shift = svdf_time_multiplier(state.scale, time.scale, output.scale, Rounding.DOUBLE)
    feature_w = np.frombuffer(feature.data, np.int8).reshape(feature.shape)
    time_w = np.frombuffer(time.data, spec.state_dtype).reshape(time.shape)
    bias_v = np.frombuffer(bias.data, "<i4") if spec.bias else None  # our kernel without bias vs TFLM's zeros
    values = np.full(state.shape, state.zero_point, spec.state_dtype)
    offsets = svdf_feature_offsets(feature_w, data.zero_point)
    if interleaved or rows:
        feature_w = interleave_weights(feature_w) if interleaved else rows_padded(feature_w)
        offsets = np.pad(offsets, (0, padded_to_tiles(offsets.size) - offsets.size))
    update = _host_function(
        functools.partial(svdf_state_update, memory=spec.memory, state_zero_point=state.zero_point,
                          multiplier=feature_multiplier, shift=feature_shift, rounding=Rounding.DOUBLE,
                          interleaved=interleaved, rows=rows),
        [inputs[0], values, feature_w, offsets],
    )
    time_zero_point = state.zero_point
    if fold:
        unfolded = bias_v if bias_v is not None else np.zeros(time_w.shape[0] // spec.rank, np.int32)
        bias_v, time_zero_point = svdf_time_offsets(unfolded, time_w, spec.rank, state.zero_point), 0
    rows = svdf_unit_rows(time_w, spec.rank) if unit_rows else time_w
    weights = [lane_order(rows.astype(np.int16)) if lanes else rows] + ([bias_v] if bias_v is not None else [])
    stage = {"state_zero_point": time_zero_point, "multiplier": time_multiplier, "shift": time_shift,
             "output_zero_point": output.zero_point, "rounding": Rounding.DOUBLE, **({"lanes": True} if lanes else {})}
    output_stage = functools.partial(svdf_output_rows, **stage) if unit_rows else \
        functools.partial(svdf_output, rank=spec.rank, **stage)
    outputs = _host_function(lambda s, t, *b: output_stage(s, t, b[0] if b else None), [values, *weights])
    results = []
    for x in inputs:
        values = update(x, values, feature_w, offsets)
        results.append(outputs(values, *weights))
    return results


def _tflm(spec: SvdfSpec, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return tflm_invocations(build_svdf_model(spec), inputs)


SPECS = [
    SvdfSpec(),
    SvdfSpec(rank=2, memory=3, seed=1),
    SvdfSpec(rank=2, memory=8, bias=False, seed=2),
    SvdfSpec(rank=1, memory=1, relu=True, seed=3),
    SvdfSpec(batch=2, units=4, rank=2, memory=5, relu=True, seed=4),
    SvdfSpec(state_dtype="int8", seed=5),
    SvdfSpec(state_dtype="int8", rank=2, memory=6, bias=False, relu=True, seed=6),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.state_dtype}-r{s.rank}-m{s.memory}-b{s.batch}"
                         f"{'-bias' if s.bias else ''}{'-relu' if s.relu else ''}")
@pytest.mark.parametrize("fold, interleaved, unit_rows, rows",
                         [(False, False, False, False), (True, False, False, False), (True, True, False, False),
                          (False, True, True, False), (True, True, True, False), (True, False, False, True)],
                         ids=["zero_point", "folded", "interleaved", "unit_rows_zero_point", "unit_rows", "rows"])
def test_kernels_match_tflm_over_invocations(spec: SvdfSpec, fold: bool, interleaved: bool, unit_rows: bool,
                                             rows: bool) -> None:
    rng = np.random.default_rng(spec.seed + 100)
    inputs = [rng.integers(-128, 128, (spec.batch, spec.inputs), dtype=np.int8) for _ in range(INVOCATIONS)]
    expected = _tflm(spec, inputs)
    saturated = np.mean([np.isin(e, (-128, 127)).mean() for e in expected])
    assert saturated < 0.5, "the test model's scales leave too little of the output range to compare"
    results = _ours(spec, inputs, fold, interleaved, unit_rows, rows=rows)
    for invocation, (ours, theirs) in enumerate(zip(results, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs, err_msg=f"invocation {invocation}")


LANE_SPECS = [SvdfSpec(state_dtype="int8", seed=7), SvdfSpec(state_dtype="int8", rank=2, memory=6, seed=8),
              SvdfSpec(state_dtype="int8", batch=2, rank=2, memory=10, seed=9)]


@pytest.mark.parametrize("spec", LANE_SPECS, ids=lambda s: f"r{s.rank}-m{s.memory}-b{s.batch}")
def test_time_weights_in_lane_order_match_tflm(spec: SvdfSpec) -> None:
    """int8 state against time weights widened and laid out in SXTB16's lane order (units' rows of whole groups of
    four), the kernel reading them in that order: TFLM's outputs."""
    rng = np.random.default_rng(spec.seed + 100)
    inputs = [rng.integers(-128, 128, (spec.batch, spec.inputs), dtype=np.int8) for _ in range(INVOCATIONS)]
    for invocation, (ours, theirs) in enumerate(zip(_ours(spec, inputs, True, True, True, lanes=True),
                                                    _tflm(spec, inputs), strict=True)):
        np.testing.assert_array_equal(ours, theirs, err_msg=f"invocation {invocation}")


def test_lane_order_pairs_each_groups_inputs_0_2_and_1_3() -> None:
    np.testing.assert_array_equal(lane_order(np.arange(10, 18).reshape(1, 8)), [[10, 12, 11, 13, 14, 16, 15, 17]])


# ------------------------------------------------------------------------------------- whole bundles
BUNDLE_SPECS = [SvdfSpec(rank=2, memory=5, seed=11), SvdfSpec(state_dtype="int8", rank=1, memory=3, seed=12)]


def _bundle(spec: SvdfSpec, tmp_path: Path, target: str):
    model = tmp_path / "svdf_layer.tflite"
    model.write_bytes(build_svdf_model(spec))
    return tvm_ext.compile(model, target=target, out=tmp_path / target)


@pytest.mark.parametrize("spec", BUNDLE_SPECS, ids=lambda s: s.state_dtype)
def test_bundle_keeps_state_across_runs_like_tflm(spec: SvdfSpec, tmp_path: Path) -> None:
    """The self-test (TFLM's first invocation) passes; then runs 2 and 3 carry the state as TFLM's invocations
    do, and a run after `<model>_reset()` is the first one again."""
    bundle = _bundle(spec, tmp_path, "lowpower")
    assert bundle.selftest.passed, bundle.selftest.output
    rng = np.random.default_rng(spec.seed)
    inputs = [rng.integers(-128, 128, (spec.batch, spec.inputs), dtype=np.int8) for _ in range(INVOCATIONS)]
    expected = _tflm(spec, inputs) + _tflm(spec, inputs[:1])
    out = tmp_path / "lowpower"
    runs = run_with_reset_last(out, "svdf_layer", inputs + inputs[:1])
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")
    assert "state0" in (out / "manifest.json").read_text()


# Shapes the DSP helpers take padded or in parts: filters and inputs that are not whole tiles and groups of four
# (the feature product's interleaved weights padded, widened to int16), memories that are not a multiple of four,
# two batches, ranks 1 and 2, both state types; with the helpers each calls.
QEMU_SPECS = [
    (SvdfSpec(batch=2, inputs=9, units=7, rank=1, memory=5, state_dtype="int8", seed=21),
     ("dual_mac_s16x4_interleaved", "row_dot_s8")),
    (SvdfSpec(batch=2, inputs=11, units=4, rank=2, memory=7, state_dtype="int8", seed=23),
     ("dual_mac_s16x4_interleaved", "row_dot_s8")),
    # ... an int8 unit's row of 20 (two filters of memory 10): its time weights widened in SXTB16's lane order
    (SvdfSpec(inputs=10, units=5, rank=2, memory=10, state_dtype="int8", seed=26),
     ("dual_mac_s16x4_interleaved", "row_dot_s8_pairs")),
    (SvdfSpec(inputs=13, units=5, rank=2, memory=3, seed=22), ("dual_mac_s16x4_interleaved", "row_dot_s16")),
    # ... an int16 unit's row of 20 (two filters of memory 10), word-aligned: LDRD by eight, then four
    (SvdfSpec(inputs=10, units=6, rank=2, memory=10, seed=25), ("dual_mac_s16x4_interleaved", "row_dot_s16")),
    # ... where the profile's flash has no byte to spare (the FlashBudget refuses the widening): the int8 weights'
    # interleaved dual MAC, the int16 one not called
    (SvdfSpec(batch=2, inputs=9, units=7, rank=1, memory=5, state_dtype="int8", seed=24),
     ("dual_mac_s8x4_interleaved", "row_dot_s8")),
]


@pytest.mark.slow
@pytest.mark.parametrize("spec, helpers", QEMU_SPECS, ids=lambda v: v.state_dtype if isinstance(v, SvdfSpec) else v[0])
def test_bundle_on_cortex_m4f_keeps_state_like_tflm(spec: SvdfSpec, helpers: tuple[str, ...], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """On the emulated Cortex-M4F (interleaved dual MAC feature product, state shift stored by STMs, time product
    unit after unit by the one-row dot product): every run of several, and a run after `<model>_reset()`, equal
    TFLM's invocations."""
    widened = "dual_mac_s16x4_interleaved" in helpers
    if not widened:  # the profile's flash holds no byte more than the model's constants
        monkeypatch.setattr(lower_quantized_to_integer, "FlashBudget", lambda spare_bytes: FlashBudget(0))
    bundle = _bundle(spec, tmp_path, "cortex-m4f")
    assert bundle.selftest.passed and bundle.selftest.where == "mps2-an386", bundle.selftest.output
    kernels = (tmp_path / "cortex-m4f" / "svdf_layer_kernels.c").read_text()
    for helper in ("state_shift", *helpers):
        assert f"svdf_layer_{helper}(" in kernels, helper
    assert f"svdf_layer_dual_mac_{'s8x4' if widened else 's16x4'}_interleaved(" not in kernels
    rng = np.random.default_rng(spec.seed)
    inputs = [rng.integers(-128, 128, (spec.batch, spec.inputs), dtype=np.int8) for _ in range(INVOCATIONS + 2)]
    expected = _tflm(spec, inputs) + _tflm(spec, inputs[:1])
    runs = run_with_reset_last_on_qemu(tmp_path / "cortex-m4f", "svdf_layer", inputs + inputs[:1])
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")


# ------------------------------------------------------------------------------------- TFLM's keyword models
KEYWORD_MODELS = ["keyword_scrambled.tflite", "keyword_scrambled_8bit.tflite"]  # int16 and int8 SVDF state


@pytest.mark.slow
@pytest.mark.parametrize("target", ["lowpower", "cortex-m4f"])
@pytest.mark.parametrize("name", KEYWORD_MODELS)
def test_keyword_models_match_tflm(name: str, target: str, compiled) -> None:
    """TFLM's keyword benchmark (SVDF, int16 input, int8 -> int16 SOFTMAX, int16 -> int32 QUANTIZE): the
    self-test compares the bundle's first run with TFLM's first invocation, exactly (the session's bundles: the
    backend suite compares the same ones with each other)."""
    bundle = compiled(f"tflm/{name}", target)
    assert bundle.selftest.passed, bundle.selftest.output
    assert bundle.selftest.where == ("host" if target == "lowpower" else "mps2-an386")
    header = (bundle.out_dir / f"{Path(name).stem}.h").read_text()
    assert f"void {Path(name).stem}_reset(void);" in header


def test_float_svdf_is_refused_for_its_state(tmp_path: Path) -> None:
    """TVM's float SVDF converter makes the state a constant: a bundle would forget it between runs."""
    import tflite

    from tvm_ext.model_check import ModelError, check_model

    float32 = fuzz_corpus.FLOAT32
    spec = fuzz_corpus.TinyTflite(
        opcodes=[(tflite.BuiltinOperator.SVDF, 1, None)],
        tensors=[fuzz_corpus.TinyTensor("input", (1, 4), float32, 0),
                 fuzz_corpus.TinyTensor("feature", (2, 4), float32, 1),
                 fuzz_corpus.TinyTensor("time", (2, 3), float32, 2),
                 fuzz_corpus.TinyTensor("bias", (2,), float32, 3),
                 fuzz_corpus.TinyTensor("state", (1, 6), float32, 0, variable=True),
                 fuzz_corpus.TinyTensor("svdf/output", (1, 2), float32, 0)],
        operators=[fuzz_corpus.TinyOperator(0, (0, 1, 2, 3, 4), (5,))],
        inputs=(0,), outputs=(5,),
        buffers=[b"", bytes(32), bytes(24), bytes(8)],
    )
    path = tmp_path / "float_svdf.tflite"
    path.write_bytes(fuzz_corpus.build_tflite(spec))
    with pytest.raises(ModelError, match=r"SVDF \(keeps state between inferences.*at layer 'svdf/output'"):
        check_model(path)
