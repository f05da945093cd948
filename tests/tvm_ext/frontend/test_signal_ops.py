"""TFLite Micro's signal-library operators, each alone in a model this test builds, compiled for the host and
run over several invocations (the state carries; the last follows `<model>_reset()`) against TFLite Micro's
Python interpreter, which registers them all (tflite-micro's PythonOpsResolver): every integer output bit for
bit, float ones too (KISS FFT's float order of operations). The inputs reach each kernel's edges: full-range
int16, -32768, values near 2^32 and 2^64, all zeros.

Where TFLite Micro leaves an output unwritten (Energy outside its bins, Framer and Stacker before a frame is
complete) its values are its arena's leftovers: there only ours is checked, to be 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pytest

pytest.importorskip("tvm")

import tvm_ext  # noqa: E402
from audio_preprocessor_models import (FeatureParams, TYPE_CODES, fft_length_of, hann_window_weights,  # noqa: E402
                                       mel_filter_bank, pcan_gain_lut, single_operator)
from stateful_bundle_driver import run_with_reset_last, tflm_invocations  # noqa: E402

RUNS = 4
Runs = Callable[[np.random.Generator], list[np.ndarray]]


@dataclass(frozen=True)
class OpCase:
    """One single-operator model, its runs' inputs, its outputs' dtypes, the C helper its kernel must call, and
    the masks of the outputs TFLite Micro leaves unwritten, from the run's index since a reset (0: the first)
    and TFLite Micro's outputs of the run."""

    model: Callable[[], bytes]
    runs: Runs
    outputs: tuple
    helper: str
    unwritten: Callable[[int, list], list[Optional[np.ndarray]]] = field(default=lambda run, theirs: [None, None])


def _int16(rng, shape, low=-32768, high=32768) -> np.ndarray:
    return rng.integers(low, high, shape).astype(np.int16)


def _edges16(shape) -> list[np.ndarray]:
    """int16 inputs at the edges: all -32768, all 32767, all 0, and -32768 beside small values."""
    edge = np.zeros(shape, np.int16)
    edge.reshape(-1)[::3] = -32768
    edge.reshape(-1)[1::3] = 3
    return [np.full(shape, -32768, np.int16), np.full(shape, 32767, np.int16), np.zeros(shape, np.int16), edge]


def _uint32(rng, shape) -> np.ndarray:
    """Values at every magnitude of uint32 (0, 1, 2 and 2^32 - 1 among them)."""
    values = (2.0 ** rng.uniform(0, 32, shape)).astype(np.uint64).clip(0, 2**32 - 1).astype(np.uint32)
    values.reshape(-1)[:4] = [0, 1, 2, 2**32 - 1]
    return values


def _window(shift: int, weights: np.ndarray) -> OpCase:
    shape = (2, weights.size)
    return OpCase(lambda: single_operator("SignalWindow", [("x", shape, "int16", None), ("w", weights.shape, "int16", weights)],
                                          [("y", shape, "int16")], shift=shift),
                  lambda rng: [_int16(rng, shape), *_edges16(shape)], (np.int16,), "lp_signal_window_s16")


def _fft_auto_scale() -> OpCase:
    return OpCase(lambda: single_operator("SignalFftAutoScale", [("x", (48,), "int16", None)],
                                          [("y", (48,), "int16"), ("scale", (), "int32")]),
                  lambda rng: [_int16(rng, 48, -300, 300), *_edges16(48), np.array([1] + [0] * 47, np.int16)],
                  (np.int16, np.int32), "lp_signal_fft_auto_scale_s16")


def _fft(code: str, dtype: str, fft_length: int, length: int) -> OpCase:
    """Two rows: SignalRfft of `length` samples (zero-padded), or SignalIrfft of a spectrum."""
    inverse = code == "SignalIrfft"
    time, spectrum = (2, length), (2, fft_length + 2)
    shapes = (spectrum, time) if inverse else (time, spectrum)

    def runs(rng):
        if dtype == "float32":
            return [rng.normal(0, 1000, shapes[0]).astype(np.float32) for _ in range(RUNS)]
        info = np.iinfo(dtype)
        return [rng.integers(info.min, info.max, shapes[0], endpoint=True).astype(dtype),
                rng.integers(info.min // 256, info.max // 256, shapes[0]).astype(dtype),
                np.full(shapes[0], info.min, dtype), np.full(shapes[0], info.max, dtype)]

    suffix = {"int16": "s16", "int32": "s32", "float32": "f32"}[dtype]
    return OpCase(lambda: single_operator(code, [("x", shapes[0], dtype, None)], [("y", shapes[1], dtype)],
                                          T=TYPE_CODES[dtype], fft_length=fft_length),
                  runs, (np.dtype(dtype),), f"lp_signal_{'i' if inverse else ''}rfft_{suffix}")


def _energy() -> OpCase:
    start, end = 3, 17

    def unwritten(run, theirs):
        mask = np.ones(20, bool)
        mask[start:end] = False
        return [mask]

    return OpCase(lambda: single_operator("SignalEnergy", [("x", (40,), "int16", None)], [("y", (20,), "uint32")],
                                          end_index=end, start_index=start),
                  lambda rng: [_int16(rng, 40), *_edges16(40)], (np.uint32,), "lp_signal_energy_s16", unwritten)


def _filter_bank() -> OpCase:
    """The micro_speech mel bank on random energies, and a bank with negative weights (which wrap in uint64)."""
    params = FeatureParams(channels=8, upper_band_limit_hz=4000.0)
    bank = mel_filter_bank(params, 128)
    spectrum = 65
    rng = np.random.default_rng(7)
    weights = rng.integers(-32768, 32768, bank.weights.size).astype(np.int16)
    tables = [("w", bank.weights.shape, "int16", weights), ("uw", bank.unweights.shape, "int16", bank.unweights),
              ("fs", bank.frequency_starts.shape, "int16", bank.frequency_starts),
              ("ws", bank.weight_starts.shape, "int16", bank.weight_starts),
              ("cw", bank.widths.shape, "int16", bank.widths)]
    return OpCase(lambda: single_operator("SignalFilterBank", [("x", (spectrum,), "uint32", None), *tables],
                                          [("y", (8,), "uint64")], num_channels=8),
                  lambda rng: [_uint32(rng, spectrum) for _ in range(RUNS)], (np.uint64,), "lp_signal_filter_bank")


def _square_root(scale_bits: int) -> OpCase:
    def runs(rng):
        values = (2.0 ** rng.uniform(0, 64, 24)).astype(np.float64)
        wide = np.array([min(int(v), 2**64 - 1) for v in values], np.uint64)
        wide[:6] = [0, 1, 2**32 - 1, 2**32, 2**64 - 1, (2**32 - 1) ** 2]
        return [wide, np.arange(24, dtype=np.uint64) ** 8]

    return OpCase(lambda: single_operator("SignalFilterBankSquareRoot",
                                          [("x", (24,), "uint64", None), ("s", (), "int32", np.array(scale_bits, np.int32))],
                                          [("y", (24,), "uint32")]),
                  runs, (np.uint32,), "lp_signal_filter_bank_sqrt")


def _spectral_subtraction(clamping: bool) -> OpCase:
    return OpCase(lambda: single_operator(
        "SignalFilterBankSpectralSubtraction", [("x", (10,), "uint32", None)],
        [("y", (10,), "uint32"), ("noise", (10,), "uint32")], num_channels=10, smoothing=409,
        one_minus_smoothing=15975, alternate_smoothing=983, alternate_one_minus_smoothing=15401, smoothing_bits=10,
        min_signal_remaining=819, clamping=clamping, spectral_subtraction_bits=14),
        lambda rng: [(rng.integers(0, 2**22, 10) >> rng.integers(0, 22, 10)).astype(np.uint32) for _ in range(RUNS + 2)],
        (np.uint32, np.uint32), "lp_signal_spectral_subtraction")


def _pcan() -> OpCase:
    """Noise estimates at every octave (the gain table's every quadratic) as a constant, inputs per run."""
    lut = pcan_gain_lut(0.95, 80.0, 7, 21)
    noise = (2.0 ** np.linspace(0, 32, 36)).clip(0, 2**32 - 1).astype(np.uint32)
    noise[:3] = [0, 1, 2]
    return OpCase(lambda: single_operator("SignalPCAN", [("x", (36,), "uint32", None), ("n", (36,), "uint32", noise),
                                                         ("lut", (125,), "int16", lut)],
                                          [("y", (36,), "uint32")], snr_shift=6),
                  lambda rng: [(rng.integers(0, 2**24, 36) >> rng.integers(0, 24, 36)).astype(np.uint32)
                               for _ in range(RUNS)], (np.uint32,), "lp_signal_pcan")


def _filter_bank_log(correction_bits: int, output_scale: int) -> OpCase:
    return OpCase(lambda: single_operator("SignalFilterBankLog", [("x", (32,), "uint32", None)], [("y", (32,), "int16")],
                                          output_scale=output_scale, input_correction_bits=correction_bits),
                  lambda rng: [_uint32(rng, 32) >> np.uint32(correction_bits) for _ in range(RUNS)], (np.int16,),
                  "lp_signal_filter_bank_log")


def _delay(delay: int) -> OpCase:
    return OpCase(lambda: single_operator("SignalDelay", [("x", (2, 6), "int16", None)], [("y", (2, 6), "int16")],
                                          delay_length=delay),
                  lambda rng: [_int16(rng, (2, 6)) for _ in range(RUNS + 2)], (np.int16,), "lp_signal_delay_s16")


def _overlap_add(dtype: str) -> OpCase:
    def runs(rng):
        if dtype == "float32":
            return [rng.normal(0, 100, (2, 3, 8)).astype(np.float32) for _ in range(RUNS)]
        return [_int16(rng, (2, 3, 8)) for _ in range(RUNS)]

    return OpCase(lambda: single_operator("SignalOverlapAdd", [("x", (2, 3, 8), dtype, None)], [("y", (2, 12), dtype)],
                                          T=TYPE_CODES[dtype], frame_step=4),
                  runs, (np.dtype(dtype),), f"lp_signal_overlap_add_{'f32' if dtype == 'float32' else 's16'}")


def _framer(prefill: bool) -> OpCase:
    def unwritten(run, theirs):
        mask = np.zeros((2, 3, 8), bool)
        if run == 0 and not prefill:
            mask[:, 0] = True  # 4 of its 8 samples are there
        return [mask, None]

    return OpCase(lambda: single_operator("SignalFramer", [("x", (2, 12), "int16", None)],
                                          [("y", (2, 3, 8), "int16"), ("valid", (), "bool")],
                                          frame_size=8, frame_step=4, prefill=prefill),
                  lambda rng: [_int16(rng, (2, 12)) for _ in range(RUNS)], (np.int16, np.bool_),
                  "lp_signal_framer_s16", unwritten)


def _stacker(step: int) -> OpCase:
    def unwritten(run, theirs):
        return [np.full(16, not theirs[1]), None]  # no frame while the FIFO is short (TFLite Micro's valid flag)

    return OpCase(lambda: single_operator("SignalStacker", [("x", (4,), "int16", None)],
                                          [("y", (16,), "int16"), ("valid", (), "bool")], num_channels=4,
                                          stacker_left_context=2, stacker_right_context=1, stacker_step=step),
                  lambda rng: [_int16(rng, 4) for _ in range(RUNS + 2)], (np.int16, np.bool_),
                  "lp_signal_stacker_s16", unwritten)


CASES = {
    "window_hann": _window(12, hann_window_weights(32, 12)),
    "window_saturating": _window(0, np.array([-32768, 32767, -1, 2] * 4, np.int16)),
    "fft_auto_scale": _fft_auto_scale(),
    "rfft_int16_512": _fft("SignalRfft", "int16", *fft_length_of(480)[:1], 480),
    "rfft_int16_radices_2345": _fft("SignalRfft", "int16", 240, 200),
    "rfft_int32_radices_2345": _fft("SignalRfft", "int32", 240, 240),
    "rfft_float_radices_2345": _fft("SignalRfft", "float32", 240, 150),
    "irfft_int16": _fft("SignalIrfft", "int16", 240, 240),
    "irfft_int32": _fft("SignalIrfft", "int32", 120, 120),
    "irfft_float": _fft("SignalIrfft", "float32", 240, 240),
    "energy": _energy(),
    "filter_bank": _filter_bank(),
    "filter_bank_square_root": _square_root(0),
    "filter_bank_square_root_scaled": _square_root(7),
    "spectral_subtraction": _spectral_subtraction(False),
    "spectral_subtraction_clamping": _spectral_subtraction(True),
    "pcan": _pcan(),
    "filter_bank_log": _filter_bank_log(3, 64),
    "filter_bank_log_wide_scale": _filter_bank_log(0, 40000),
    "delay": _delay(4),
    "delay_longer_than_frame": _delay(9),
    "overlap_add_int16": _overlap_add("int16"),
    "overlap_add_float": _overlap_add("float32"),
    "framer": _framer(False),
    "framer_prefill": _framer(True),
    "stacker": _stacker(1),
    "stacker_step_2": _stacker(2),
}


def _compare(case: OpCase, run: int, since_reset: int, ours: list, theirs: list) -> None:
    for k, (mine, reference, mask) in enumerate(zip(ours, theirs, case.unwritten(since_reset, theirs))):
        mine, reference = np.asarray(mine).reshape(-1), np.asarray(reference).reshape(-1)
        if mask is not None:
            written = ~mask.reshape(-1)
            assert not mine[~written].any(), f"run {run} output {k}: not 0 where TFLite Micro writes nothing"
            mine, reference = mine[written], reference[written]
        np.testing.assert_array_equal(mine, reference, err_msg=f"run {run} output {k}")


@pytest.mark.parametrize("name", list(CASES))
def test_operator_matches_tflite_micro(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    model = tmp_path / "audio_op.tflite"
    model.write_bytes(case.model())
    bundle = tvm_ext.compile(model, out=tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    assert f"{case.helper}(" in (tmp_path / "out" / "audio_op_kernels.c").read_text()
    inputs = case.runs(np.random.default_rng(sum(map(ord, name))))
    outputs = len(case.outputs)
    expected = tflm_invocations(model.read_bytes(), inputs, outputs) + tflm_invocations(model.read_bytes(), inputs[:1],
                                                                                         outputs)
    runs = run_with_reset_last(tmp_path / "out", "audio_op", inputs + inputs[:1], case.outputs,
                               reset_last=bool(bundle.plan.states()))
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        ours, theirs = ([ours], [theirs]) if outputs == 1 else (ours, theirs)
        _compare(case, run, run if run < len(inputs) else 0, ours, theirs)


def _quantized_model_with_a_window() -> bytes:
    """int16 audio (quantized) -> SignalWindow (raw integers) -> QUANTIZE to int8 -> FULLY_CONNECTED int8: a
    signal operator inside a quantized model, whose integer pass keeps the operator's kernel as it is."""
    from tflite_builder import Model, Operator, Options, Quantization, Tensor, build
    from audio_preprocessor_models import options

    rng = np.random.default_rng(3)
    audio, features = Quantization((1 / 32768,), (0,)), Quantization((1 / 256,), (-3,))
    tensors = [Tensor("x", (1, 32), "int16", audio),
               Tensor("w", (32,), "int16", data=hann_window_weights(32, 12)),
               Tensor("windowed", (1, 32), "int16", audio), Tensor("q", (1, 32), "int8", features),
               Tensor("fc_w", (4, 32), "int8", Quantization((0.02,), (0,)),
                      data=rng.integers(-127, 128, (4, 32)).astype(np.int8)),
               Tensor("fc_b", (4,), "int32", Quantization((0.02 / 256,), (0,)), data=np.zeros(4, np.int32)),
               Tensor("y", (1, 4), "int8", Quantization((0.05,), (2,)))]
    operators = [Operator("CUSTOM", (0, 1), (2,), custom_code="SignalWindow", custom_options=options(shift=12)),
                 Operator("QUANTIZE", (2,), (3,)),
                 Operator("FULLY_CONNECTED", (3, 4, 5), (6,), Options("FullyConnectedOptions"))]
    return build(Model(tensors, operators, (0,), (6,)))


def test_signal_operator_inside_a_quantized_model_matches_tflite_micro(tmp_path: Path) -> None:
    model = tmp_path / "audio_op.tflite"
    model.write_bytes(_quantized_model_with_a_window())
    bundle = tvm_ext.compile(model, out=tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    rng = np.random.default_rng(11)
    inputs = [_int16(rng, (1, 32)) for _ in range(RUNS)] + _edges16((1, 32))
    expected = tflm_invocations(model.read_bytes(), inputs)
    runs = run_with_reset_last(tmp_path / "out", "audio_op", inputs, (np.int8,), reset_last=False)
    for run, (ours, theirs) in enumerate(zip(runs, expected, strict=True)):
        np.testing.assert_array_equal(ours, theirs.reshape(-1), err_msg=f"run {run}")
    assert len({e.tobytes() for e in expected}) > 3, "the outputs should differ"
