"""TFLite Micro's signal-library operators as .tflite models built in tests: each operator alone, and the audio
preprocessor of TFLite Micro's micro_speech example (int8 and float output), the graph its
`audio_preprocessor.py` makes with TFLite's converter, from the same parameters (`FeatureParams`' defaults).

The constants are computed as the signal library's Python ops compute them (window_op.hann_window_weights,
filter_bank_ops' mel filter bank, pcan_op's gain table through wide_dynamic_func_lut), in the C float
arithmetic those use: libm's log1pf and powf through ctypes. Custom options are flexbuffer maps, as TFLite's
converter writes a custom operator's attributes (`flatbuffers.flexbuffers`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from dataclasses import dataclass

import numpy as np
from flatbuffers import flexbuffers

from tflite_builder import Model, Operator, Options, Tensor, build

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.log1pf.restype = ctypes.c_float
_LIBM.log1pf.argtypes = [ctypes.c_float]
_LIBM.powf.restype = ctypes.c_float
_LIBM.powf.argtypes = [ctypes.c_float, ctypes.c_float]
F32 = np.float32
TYPE_CODES = {"float32": 0, "int32": 2, "int16": 7}  # TFLite TensorType, the `T` attribute


@dataclass(frozen=True)
class FeatureParams:
    """audio_preprocessor.FeatureParams' defaults: the ones micro_speech_quantized.tflite was trained with."""

    sample_rate: int = 16000
    window_size_ms: int = 30
    window_stride_ms: int = 20
    window_scaling_bits: int = 12
    channels: int = 40
    lower_band_limit_hz: float = 125.0
    upper_band_limit_hz: float = 7500.0
    filter_bank_scaling_bits: int = 12
    filter_bank_alignment: int = 4
    filter_bank_channel_block_size: int = 4
    post_scaling_bits: int = 6
    spectral_subtraction_bits: int = 14
    smoothing_bits: int = 10
    even_smoothing: float = 0.025
    odd_smoothing: float = 0.06
    min_signal_remaining: float = 0.05
    clamping: bool = False
    pcan_strength: float = 0.95
    pcan_offset: float = 80.0
    pcan_gain_bits: int = 21
    pcan_smoothing_bits: int = 10
    legacy_output_scaling: float = 25.6

    @property
    def window_samples(self) -> int:
        return self.window_size_ms * self.sample_rate // 1000

    @property
    def stride_samples(self) -> int:
        return self.window_stride_ms * self.sample_rate // 1000


def options(**attributes) -> bytes:
    """A custom operator's attributes as TFLite's converter writes them: a flexbuffer map."""
    return bytes(flexbuffers.Dumps(attributes))


def hann_window_weights(length: int, shift: int) -> np.ndarray:
    """window_op.hann_window_weights: round(2^shift (0.5 - 0.5 cos(2 pi (i + 0.5) / length))) as int16."""
    index = np.arange(length)
    return np.round((0.5 - 0.5 * np.cos(np.pi * 2 / length * (index + 0.5))) * 2**shift).astype(np.int16)


def fft_length_of(samples: int) -> tuple[int, int]:
    """fft_ops.get_pow2_fft_length: the power of two at least `samples`, and its log2."""
    bits = math.ceil(math.log2(samples))
    return 2**bits, bits


def _freq_to_mel(freq: float) -> F32:
    """freq_to_mel_wrapper.FreqToMel: 1127.0f * log1pf(freq / 700.0f), in float (the argument a float)."""
    return F32(F32(1127.0) * F32(_LIBM.log1pf(float(F32(F32(freq) / F32(700.0))))))


@dataclass(frozen=True)
class FilterBank:
    """filter_bank_ops._init_filter_bank_weights' result."""

    start_index: int
    end_index: int
    weights: np.ndarray
    unweights: np.ndarray
    frequency_starts: np.ndarray
    weight_starts: np.ndarray
    widths: np.ndarray


def mel_filter_bank(params: FeatureParams, fft_length: int) -> FilterBank:
    """filter_bank_ops._init_filter_bank_weights for the spectrum of `fft_length`, step by step."""
    spectrum_size = fft_length / 2 + 1
    channels, block = params.channels, params.filter_bank_channel_block_size
    index_alignment = 1 if params.filter_bank_alignment < 2 else params.filter_bank_alignment // 2
    frequency_starts, weight_starts, widths = (np.zeros(channels + 1, np.int16) for _ in range(3))
    actual_starts, actual_widths = np.zeros(channels + 1, np.int16), np.zeros(channels + 1, np.int16)
    mel_low, mel_high = _freq_to_mel(params.lower_band_limit_hz), _freq_to_mel(params.upper_band_limit_hz)
    spacing = (mel_high - mel_low) / F32(channels + 1)
    centers = mel_low + spacing * np.arange(1, channels + 2, dtype=F32)
    hz_per_bin = (params.sample_rate / 2) / (spectrum_size - 1)
    start_index = round(1 + params.lower_band_limit_hz / hz_per_bin)
    frequency_start, weight_start, needs_zeros = start_index, 0, False
    for channel in range(channels + 1):
        frequency = frequency_start
        while _freq_to_mel(frequency * hz_per_bin) <= centers[channel]:
            frequency += 1
        width = frequency - frequency_start
        actual_starts[channel], actual_widths[channel] = frequency_start, width
        if width == 0:
            frequency_starts[channel], weight_starts[channel], widths[channel] = 0, 0, block
            if not needs_zeros:
                needs_zeros = True
                weight_starts[:channel] += block
                weight_start += block
        else:
            aligned = frequency_start // index_alignment * index_alignment
            padded = ((frequency_start - aligned + width - 1) // block + 1) * block
            frequency_starts[channel], weight_starts[channel], widths[channel] = aligned, weight_start, padded
            weight_start += padded
        frequency_start = frequency
    weights, unweights = np.zeros(weight_start, np.int16), np.zeros(weight_start, np.int16)
    end_index = 0
    for channel in range(channels + 1):
        frequency = int(actual_starts[channel])
        offset = frequency - int(frequency_starts[channel])
        denominator = centers[channel] - (mel_low if channel == 0 else centers[channel - 1])
        for j in range(int(actual_widths[channel])):
            weight = F32(centers[channel] - _freq_to_mel(frequency * hz_per_bin)) / F32(denominator)
            index = int(weight_starts[channel]) + offset + j
            weights[index] = int(weight * F32(1 << params.filter_bank_scaling_bits))
            unweights[index] = int((F32(1) - weight) * F32(1 << params.filter_bank_scaling_bits))
            frequency += 1
        end_index = max(end_index, frequency)
    return FilterBank(start_index, end_index, weights, unweights, frequency_starts, weight_starts, widths)


def _pcan_gain(strength: float, offset: float, gain_bits: int, input_bits: int, x: int) -> int:
    """PcanGainLookupFunction in float arithmetic, saturated to int16."""
    x_float = F32(F32(x) / F32(1 << input_bits))
    gain = F32(F32(1 << gain_bits) * F32(_LIBM.powf(float(x_float + F32(offset)), float(-F32(strength)))))
    return 32767 if gain > 32767 else int(gain + F32(0.5))


def pcan_gain_lut(strength: float, offset: float, input_bits: int, gain_bits: int) -> np.ndarray:
    """wide_dynamic_func_lut_wrapper.WideDynamicFuncLut: 125 int16, a quadratic per octave of the noise."""
    lut = [0] * 131
    lut[0] = _pcan_gain(strength, offset, gain_bits, input_bits, 0)
    lut[1] = _pcan_gain(strength, offset, gain_bits, input_bits, 1)
    for interval in range(2, 33):
        x0 = 1 << (interval - 1)
        x1, x2 = x0 + (x0 >> 1), (x0 + x0 - 1) if interval == 32 else 2 * x0
        y0, y1, y2 = (_pcan_gain(strength, offset, gain_bits, input_bits, x) for x in (x0, x1, x2))
        a1 = 4 * (y1 - y0) - (y2 - y0)
        lut[4 * interval - 6: 4 * interval - 2] = [y0, a1, (y2 - y0) - a1, 0]
    return np.array(lut[:125], np.int64).astype(np.int16)


class _Graph:
    """Tensors and operators of a model under construction; each add returns the tensor's index."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.operators: list[Operator] = []

    def tensor(self, name: str, shape, dtype: str, data=None) -> int:
        self.tensors.append(Tensor(name, tuple(shape), dtype, data=None if data is None else np.asarray(data, dtype)))
        return len(self.tensors) - 1

    def constant(self, name: str, value, dtype: str) -> int:
        value = np.asarray(value, dtype)
        return self.tensor(name, value.shape, dtype, value)

    def custom(self, code: str, inputs, outputs, **attributes) -> None:
        self.operators.append(Operator("CUSTOM", tuple(inputs), tuple(outputs), custom_code=code,
                                       custom_options=options(**attributes)))

    def builtin(self, name: str, inputs, outputs, table: str | None = None, **fields) -> None:
        self.operators.append(Operator(name, tuple(inputs), tuple(outputs),
                                       Options(table, fields) if table else None))

    def model(self, inputs, outputs) -> bytes:
        return build(Model(self.tensors, self.operators, tuple(inputs), tuple(outputs)))


def audio_preprocessor(float_output: bool = False, params: FeatureParams = FeatureParams()) -> bytes:
    """The micro_speech audio preprocessor: int16 [1, 480] samples -> 40 features, int8 (or float32)."""
    g = _Graph()
    samples = params.window_samples
    fft_length, fft_bits = fft_length_of(samples)
    bank = mel_filter_bank(params, fft_length)
    spectrum = fft_length // 2 + 1
    correction_bits = fft_bits - params.filter_bank_scaling_bits // 2
    audio = g.tensor("audio_frame", (1, samples), "int16")
    window = g.tensor("signal_window", (1, samples), "int16")
    g.custom("SignalWindow", [audio, g.constant("hann_window_weights",
                                                hann_window_weights(samples, params.window_scaling_bits), "int16")],
             [window], shift=params.window_scaling_bits)
    flat = g.tensor("Reshape", (samples,), "int16")
    g.builtin("RESHAPE", [window, g.constant("Reshape/shape", [-1], "int32")], [flat])
    scaled, scale_bits = g.tensor("signal_fft_auto_scale", (samples,), "int16"), g.tensor("scale_bits", (), "int32")
    g.custom("SignalFftAutoScale", [flat], [scaled, scale_bits])
    fft = g.tensor("signal_rfft", (fft_length + 2,), "int16")
    g.custom("SignalRfft", [scaled], [fft], T=TYPE_CODES["int16"], fft_length=fft_length)
    energy = g.tensor("signal_energy", (spectrum,), "uint32")
    g.custom("SignalEnergy", [fft], [energy], end_index=bank.end_index, start_index=bank.start_index)
    # The energy outside the filter bank's bins is zeroed by builtin operators (the Energy kernel leaves it).
    as_int = g.tensor("Cast", (spectrum,), "int32")
    g.builtin("CAST", [energy], [as_int])
    used = g.tensor("strided_slice", (bank.end_index - bank.start_index,), "int32")
    g.builtin("STRIDED_SLICE", [as_int, g.constant("begin", [bank.start_index], "int32"),
                                g.constant("end", [bank.end_index], "int32"), g.constant("strides", [1], "int32")],
              [used], "StridedSliceOptions")
    zeroed = g.tensor("concat", (spectrum,), "int32")
    g.builtin("CONCATENATION", [g.constant("zeros", np.zeros(bank.start_index), "int32"), used,
                                g.constant("zeros_1", np.zeros(spectrum - bank.end_index), "int32")], [zeroed],
              "ConcatenationOptions", Axis=0)
    energy_used = g.tensor("Cast_1", (spectrum,), "uint32")
    g.builtin("CAST", [zeroed], [energy_used])
    filtered = g.tensor("signal_filter_bank", (params.channels,), "uint64")
    g.custom("SignalFilterBank", [energy_used, *(g.constant(name, table, "int16") for name, table in (
        ("weights", bank.weights), ("unweights", bank.unweights), ("channel_frequency_starts", bank.frequency_starts),
        ("channel_weight_starts", bank.weight_starts), ("channel_widths", bank.widths)))],
        [filtered], num_channels=params.channels)
    rooted = g.tensor("signal_filter_bank_square_root", (params.channels,), "uint32")
    g.custom("SignalFilterBankSquareRoot", [filtered, scale_bits], [rooted])
    denoised, noise = (g.tensor(name, (params.channels,), "uint32")
                       for name in ("signal_filter_bank_spectral_subtraction", "noise_estimate"))
    scale = 1 << params.spectral_subtraction_bits
    smoothing, alternate = int(params.even_smoothing * scale), int(params.odd_smoothing * scale)
    g.custom("SignalFilterBankSpectralSubtraction", [rooted], [denoised, noise],
             num_channels=params.channels, smoothing=smoothing, one_minus_smoothing=scale - smoothing,
             alternate_smoothing=alternate, alternate_one_minus_smoothing=scale - alternate,
             smoothing_bits=params.smoothing_bits, min_signal_remaining=int(params.min_signal_remaining * scale),
             clamping=params.clamping, spectral_subtraction_bits=params.spectral_subtraction_bits)
    gain_control = g.tensor("signal_pcan", (params.channels,), "uint32")
    lut = pcan_gain_lut(params.pcan_strength, params.pcan_offset, params.pcan_smoothing_bits - correction_bits,
                        params.pcan_gain_bits)
    g.custom("SignalPCAN", [denoised, noise, g.constant("gain_lut", lut, "int16")], [gain_control], snr_shift=6)
    features = g.tensor("signal_filter_bank_log", (params.channels,), "int16")
    g.custom("SignalFilterBankLog", [gain_control], [features], output_scale=1 << params.post_scaling_bits,
             input_correction_bits=correction_bits)
    return _output_stage(g, audio, features, params, float_output)


def _output_stage(g: _Graph, audio: int, features: int, params: FeatureParams, float_output: bool) -> bytes:
    """The features as the keyword model's input: float32 / 25.6, or int8 (feature * 256 + 333) / 666 - 128
    clamped (truncating division), as the converter lowers audio_preprocessor.py's TensorFlow."""
    n = params.channels
    if float_output:
        as_float, output = g.tensor("Cast_2", (n,), "float32"), g.tensor("features", (n,), "float32")
        g.builtin("CAST", [features], [as_float])
        g.builtin("MUL", [as_float, g.constant("truediv/y", 1 / params.legacy_output_scaling, "float32")], [output],
                  "MulOptions")
        return g.model([audio], [output])
    value_div = int(25.6 * 26 + 0.5)
    step = g.tensor("Cast_2", (n,), "int32")
    g.builtin("CAST", [features], [step])
    for name, value, op, table in (("mul", 256, "MUL", "MulOptions"), ("add", value_div // 2, "ADD", "AddOptions"),
                                   ("TruncateDiv", value_div, "DIV", "DivOptions"), ("add_1", -128, "ADD", "AddOptions"),
                                   ("Minimum", 127, "MINIMUM", None), ("Maximum", -128, "MAXIMUM", None)):
        result = g.tensor(name, (n,), "int32")
        g.builtin(op, [step, g.constant(f"{name}/y", value, "int32")], [result], table)
        step = result
    output = g.tensor("features", (n,), "int8")
    g.builtin("CAST", [step], [output])
    return g.model([audio], [output])


def single_operator(code: str, inputs: list[tuple[str, tuple[int, ...], str, np.ndarray | None]],
                    outputs: list[tuple[str, tuple[int, ...], str]], **attributes) -> bytes:
    """A model of one signal operator: `inputs` (name, shape, dtype, constant data or None for a model input)
    and `outputs` (name, shape, dtype), its attributes as custom options."""
    g = _Graph()
    indices = [g.tensor(name, shape, dtype, data) for name, shape, dtype, data in inputs]
    model_inputs = [i for i, (*_, data) in zip(indices, inputs) if data is None]
    out = [g.tensor(name, shape, dtype) for name, shape, dtype in outputs]
    g.custom(code, indices, out, **attributes)
    return g.model(model_inputs, out)


def speech_audio(seconds: float = 1.0, seed: int = 0, sample_rate: int = 16000) -> np.ndarray:
    """int16 audio with speech-like energy: a gliding tone in bursts over noise, and a loud click."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    bursts = (np.sin(2 * np.pi * 3 * t) > 0.2).astype(float)
    audio = 9000 * np.sin(2 * np.pi * (250 + 1800 * t) * t) * bursts + rng.normal(0, 400, t.size)
    audio[len(audio) // 2: len(audio) // 2 + 40] = 32767
    return np.clip(np.round(audio), -32768, 32767).astype(np.int16)


def frames_of(audio: np.ndarray, params: FeatureParams = FeatureParams()) -> list[np.ndarray]:
    """The [1, 480] windows micro_speech takes every 20 ms: 49 of them for one second."""
    count = (len(audio) - params.window_samples) // params.stride_samples + 1
    return [audio[k * params.stride_samples: k * params.stride_samples + params.window_samples]
            .reshape(1, params.window_samples) for k in range(count)]
