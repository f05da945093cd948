"""TFLite Micro's signal-library custom operators (signal/micro/kernels): what each one reads and what its
kernel needs of the model, as data. No TVM.

TFLite's converter writes a custom operator's attributes as a flexbuffer map; TFLite Micro reads the map's
values by their position in key order (`FlexbufferWrapper::ElementAsInt32(i)`: the raw inline value as an
int64, cast to int32). `read_options` therefore takes only a map of exactly the operator's attribute names
whose values are inline integers or booleans fitting int32: then a read by position and a read by name agree.

`operator_problem` says what TFLite Micro's kernel would do wrong with the operator's tensors and options
(read or write out of bounds, shift by the width or more, crash): TFLite Micro checks only types and
ranks, and none of it. Sizes are in elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

TFLITE_TYPE_CODES = {0: "float32", 2: "int32", 7: "int16"}  # the `T` attribute of SignalRfft/Irfft/OverlapAdd
_INT32_RANGE = (-(2**31), 2**31 - 1)
_KISS_RADICES = frozenset({2, 3, 4, 5})  # the butterflies KISS FFT has without allocating (TFLite Micro's build)
PCAN_GAIN_LUT_ENTRIES = 125  # WideDynamicFunction reads up to lut[4 * 32 - 6 + 2]


@dataclass(frozen=True)
class SignalOperator:
    """One signal-library operator: its custom code, attribute names (sorted: TFLite Micro's read order) and
    which of them are booleans, and its tensors' dtypes (None: the `T` attribute's type)."""

    code: str
    attributes: tuple[str, ...]
    inputs: tuple[Optional[str], ...]
    outputs: tuple[Optional[str], ...]
    booleans: frozenset[str] = frozenset()


def _operator(code: str, attributes: tuple[str, ...], inputs, outputs, booleans=()) -> SignalOperator:
    return SignalOperator(code, tuple(sorted(attributes)), tuple(inputs), tuple(outputs), frozenset(booleans))


SIGNAL_OPERATORS: dict[str, SignalOperator] = {op.code: op for op in (
    _operator("SignalWindow", ("shift",), ("int16", "int16"), ("int16",)),
    _operator("SignalFftAutoScale", (), ("int16",), ("int16", "int32")),
    _operator("SignalRfft", ("T", "fft_length"), (None,), (None,)),
    _operator("SignalIrfft", ("T", "fft_length"), (None,), (None,)),
    _operator("SignalEnergy", ("end_index", "start_index"), ("int16",), ("uint32",)),
    _operator("SignalFilterBank", ("num_channels",), ("uint32", "int16", "int16", "int16", "int16", "int16"),
              ("uint64",)),
    _operator("SignalFilterBankSquareRoot", (), ("uint64", "int32"), ("uint32",)),
    _operator("SignalFilterBankSpectralSubtraction",
              ("alternate_one_minus_smoothing", "alternate_smoothing", "clamping", "min_signal_remaining",
               "num_channels", "one_minus_smoothing", "smoothing", "smoothing_bits", "spectral_subtraction_bits"),
              ("uint32",), ("uint32", "uint32"), booleans=("clamping",)),
    _operator("SignalFilterBankLog", ("input_correction_bits", "output_scale"), ("uint32",), ("int16",)),
    _operator("SignalPCAN", ("snr_shift",), ("uint32", "uint32", "int16"), ("uint32",)),
    _operator("SignalDelay", ("delay_length",), ("int16",), ("int16",)),
    _operator("SignalFramer", ("frame_size", "frame_step", "prefill"), ("int16",), ("int16", "bool"),
              booleans=("prefill",)),
    _operator("SignalStacker", ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step"),
              ("int16",), ("int16", "bool")),
    _operator("SignalOverlapAdd", ("T", "frame_step"), (None,), (None,)),
)}
_TYPED = {"SignalRfft": ("int16", "int32", "float32"), "SignalIrfft": ("int16", "int32", "float32"),
          "SignalOverlapAdd": ("int16", "float32")}


class SignalOptionsError(ValueError):
    """The operator's custom options are not what TFLite Micro reads them as; the message says why."""


def read_options(op: SignalOperator, data: bytes) -> dict[str, int]:
    """The operator's attributes from its custom options (a flexbuffer map); SignalOptionsError otherwise."""
    from flatbuffers import flexbuffers

    if not op.attributes and not data:
        return {}  # TFLite Micro does not read the options of an operator without attributes
    try:
        root = flexbuffers.GetRoot(bytearray(data))
        if not root.IsMap:
            raise SignalOptionsError("custom options are not a flexbuffer map")
        options = root.AsMap
        keys = tuple(key.AsKey for key in options.Keys)
        values = list(options.Values)
    except SignalOptionsError:
        raise
    except Exception as err:  # noqa: BLE001 - malformed bytes can make the flexbuffer reader raise anything
        raise SignalOptionsError(f"custom options are not a readable flexbuffer ({type(err).__name__})") from None
    if keys != op.attributes:
        raise SignalOptionsError(f"custom options name {', '.join(keys) or 'nothing'}; TFLite Micro reads "
                                 f"{', '.join(op.attributes) or 'none'} by position")
    read: dict[str, int] = {}
    for key, value in zip(keys, values):
        if not (value.IsInt or value.IsBool) or value.IsTypedVector:
            raise SignalOptionsError(f"option {key} is not an inline integer or boolean")
        number = int(value.AsBool) if value.IsBool else value.AsInt
        if not _INT32_RANGE[0] <= number <= _INT32_RANGE[1]:
            raise SignalOptionsError(f"option {key} = {number} does not fit int32")
        read[key] = number
    return read


@dataclass(frozen=True)
class TensorView:
    """What the checks read of one operator tensor: shape, dtype name, and its data when constant."""

    shape: tuple[int, ...]
    dtype: str
    data: Optional[np.ndarray] = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


def operator_problem(op: SignalOperator, options: dict[str, int], inputs: list[TensorView],
                     outputs: list[TensorView]) -> Optional[str]:
    """Why TFLite Micro's kernel cannot run `op` as the model gives it (one phrase), or None."""
    if len(inputs) != len(op.inputs) or len(outputs) != len(op.outputs):
        return (f"{len(inputs)} inputs and {len(outputs)} outputs, TFLite Micro's kernel takes "
                f"{len(op.inputs)} and {len(op.outputs)}")
    typed = _TYPED.get(op.code)
    element = TFLITE_TYPE_CODES.get(options.get("T", -1)) if typed else None
    if typed and element not in typed:
        return f"attribute T = {options['T']} is not one of {', '.join(typed)}"
    for role, expected, tensors in (("input", op.inputs, inputs), ("output", op.outputs, outputs)):
        for index, (dtype, tensor) in enumerate(zip(expected, tensors)):
            if tensor.dtype != (dtype or element):
                return f"{role} {index} is {tensor.dtype}, TFLite Micro's kernel reads {dtype or element}"
    return _CHECKS[op.code](options, inputs, outputs)


def _out_of(value: int, low: int, high: int, name: str) -> Optional[str]:
    return None if low <= value <= high else f"{name} = {value} is outside {low}..{high}"


def _ranks(tensors: list[TensorView], ranks: tuple[Optional[int], ...], role: str) -> Optional[str]:
    for index, (tensor, rank) in enumerate(zip(tensors, ranks)):
        if rank is not None and len(tensor.shape) != rank:
            return f"{role} {index} has rank {len(tensor.shape)}, TFLite Micro's kernel needs {rank}"
    return None


def _first(*problems: Optional[str]) -> Optional[str]:
    return next((problem for problem in problems if problem is not None), None)


def _same_shape(a: TensorView, b: TensorView, what: str) -> Optional[str]:
    return None if a.shape == b.shape else f"{what}: shapes {list(a.shape)} and {list(b.shape)} differ"


def _window(options, inputs, outputs):
    data, weights = inputs
    return _first(_ranks([weights], (1,), "weights"), _same_shape(data, outputs[0], "input and output"),
                  None if data.shape and weights.elements and data.elements % weights.elements == 0 else
                  f"{data.elements} samples are not whole windows of {weights.elements} weights",
                  _out_of(options["shift"], 0, 31, "shift"))


def _fft_auto_scale(options, inputs, outputs):
    return _first(_ranks(inputs, (1,), "input"), _ranks(outputs, (1, 0), "output"),
                  _same_shape(inputs[0], outputs[0], "input and output"))


def kiss_factors(n: int) -> list[int]:
    """KISS FFT's kf_factor of n: (radix, remaining length) pairs, fours first, then twos, then odd primes."""
    factors: list[int] = []
    p = 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        factors += [p, n]
        if n <= 1:
            return factors


def _fft_length_problem(fft_length: int) -> Optional[str]:
    if fft_length < 4 or fft_length % 2 or fft_length > 1 << 16:
        return f"fft_length = {fft_length} is not an even number in 4..65536"
    radices = [p for p in kiss_factors(fft_length // 2)[::2] if p not in _KISS_RADICES]
    return (f"fft_length = {fft_length}: half of it has the prime factor {radices[0]}, which TFLite Micro's "
            "KISS FFT build cannot transform (only 2, 3 and 5)") if radices else None


def _rows(time: TensorView, frequency: TensorView, time_length: int, fft_length: int) -> Optional[str]:
    if len(time.shape) != len(frequency.shape) or not time.shape or time.shape[:-1] != frequency.shape[:-1]:
        return f"shapes {list(time.shape)} and {list(frequency.shape)} are not the same rows"
    if frequency.shape[-1] != fft_length + 2:
        return f"a spectrum row of {frequency.shape[-1]} values, not fft_length + 2 = {fft_length + 2}"
    return None if time.shape[-1] == time_length else f"a signal row of {time.shape[-1]} samples, not {time_length}"


def _rfft(options, inputs, outputs):
    fft_length = options["fft_length"]
    length = inputs[0].shape[-1] if inputs[0].shape else 0
    return _first(_fft_length_problem(fft_length),
                  None if 1 <= length <= fft_length else f"rows of {length} samples, more than fft_length",
                  _rows(inputs[0], outputs[0], length, fft_length))


def _irfft(options, inputs, outputs):
    fft_length = options["fft_length"]
    return _first(_fft_length_problem(fft_length), _rows(outputs[0], inputs[0], fft_length, fft_length))


def _energy(options, inputs, outputs):
    spectrum, energy = inputs[0], outputs[0]
    start, end = options["start_index"], options["end_index"]
    return _first(_ranks(inputs, (1,), "input"), _ranks(outputs, (1,), "output"),
                  None if spectrum.elements == 2 * energy.elements else
                  f"{spectrum.elements} spectrum values for {energy.elements} energies",
                  None if 0 <= start <= end <= energy.elements else
                  f"bins {start}..{end} are not within the {energy.elements} of the spectrum")


def _filter_bank(options, inputs, outputs):
    channels = options["num_channels"]
    energy, weights, unweights, frequency_starts, weight_starts, widths = inputs
    problem = _first(_ranks(inputs, (1,) * 6, "input"), _ranks(outputs, (1,), "output"),
                     None if outputs[0].elements == channels >= 0 else
                     f"num_channels = {channels} but {outputs[0].elements} outputs")
    if problem:
        return problem
    tables = (frequency_starts, weight_starts, widths)
    if any(table.data is None for table in tables):
        return "its channel tables (inputs 3 to 5) are not constants: TFLite Micro indexes with them unchecked"
    if any(table.elements < channels + 1 for table in tables):
        return f"its channel tables hold fewer than num_channels + 1 = {channels + 1} entries"
    starts, offsets, counts = (table.data.astype(np.int64)[:channels + 1] for table in tables)
    for channel, (start, offset, count) in enumerate(zip(starts, offsets, counts)):
        if count > 0 and not (0 <= start and start + count <= energy.elements and 0 <= offset
                              and offset + count <= min(weights.elements, unweights.elements)):
            return (f"channel {channel}'s band ({count} bins from bin {start}, weights from {offset}) reaches past "
                    f"the {energy.elements} energies or {min(weights.elements, unweights.elements)} weights")
    return None


def _filter_bank_square_root(options, inputs, outputs):
    return _first(_ranks(inputs, (1, 0), "input"), _ranks(outputs, (1,), "output"),
                  _same_shape(inputs[0], outputs[0], "input and output"))


def _spectral_subtraction(options, inputs, outputs):
    channels = options["num_channels"]
    return _first(_ranks(inputs, (1,), "input"), _ranks(outputs, (1, 1), "output"),
                  None if inputs[0].elements == outputs[0].elements == outputs[1].elements == channels else
                  f"num_channels = {channels} for {inputs[0].elements} inputs",
                  _out_of(options["smoothing_bits"], 0, 31, "smoothing_bits"),
                  _out_of(options["spectral_subtraction_bits"], 0, 63, "spectral_subtraction_bits"))


def _pcan(options, inputs, outputs):
    data, noise, lut = inputs
    return _first(_ranks(inputs, (1, 1, 1), "input"), _ranks(outputs, (1,), "output"),
                  _same_shape(data, outputs[0], "input and output"),
                  None if noise.elements >= data.elements else f"{noise.elements} noise estimates for "
                                                               f"{data.elements} channels",
                  None if lut.elements >= PCAN_GAIN_LUT_ENTRIES else
                  f"a gain table of {lut.elements} entries, fewer than the {PCAN_GAIN_LUT_ENTRIES} it reads",
                  _out_of(options["snr_shift"], 0, 63, "snr_shift"))


def _filter_bank_log(options, inputs, outputs):
    return _first(_ranks(inputs, (1,), "input"), _ranks(outputs, (1,), "output"),
                  _same_shape(inputs[0], outputs[0], "input and output"),
                  _out_of(options["input_correction_bits"], 0, 31, "input_correction_bits"))


def _delay(options, inputs, outputs):
    return _first(None if inputs[0].shape else "a scalar input",
                  _same_shape(inputs[0], outputs[0], "input and output"),
                  _out_of(options["delay_length"], 0, 1 << 20, "delay_length"))


def _framer(options, inputs, outputs):
    size, step = options["frame_size"], options["frame_step"]
    data, (frames, valid) = inputs[0], outputs
    problem = _first(_out_of(size, 1, 1 << 20, "frame_size"), _out_of(step, 1, 1 << 20, "frame_step"),
                     _ranks([valid], (0,), "output 1"), None if data.shape else "a scalar input")
    if problem:
        return problem
    length = data.shape[-1]
    expected = (*data.shape[:-1], length // step, size)
    return _first(None if length >= step and length % step == 0 else
                  f"rows of {length} samples are not whole steps of {step}",
                  None if frames.shape == expected else f"frames {list(frames.shape)}, not {list(expected)}",
                  None if not options["prefill"] or size >= step else "prefill with frame_size < frame_step")


def _stacker(options, inputs, outputs):
    channels, left, right, step = (options[name] for name in SIGNAL_OPERATORS["SignalStacker"].attributes)
    problem = _first(_out_of(channels, 1, 1 << 16, "num_channels"), _out_of(left, 0, 1 << 10, "stacker_left_context"),
                     _out_of(right, 0, 1 << 10, "stacker_right_context"),
                     _out_of(step, 1, left + right + 1, "stacker_step"),
                     _ranks(inputs, (1,), "input"), _ranks(outputs, (1, 0), "output"))
    return problem or _first(
        None if inputs[0].elements == channels else f"{inputs[0].elements} inputs for num_channels = {channels}",
        None if outputs[0].elements == channels * (left + right + 1) else
        f"{outputs[0].elements} outputs, not num_channels x (contexts + 1) = {channels * (left + right + 1)}")


def _overlap_add(options, inputs, outputs):
    step = options["frame_step"]
    data, output = inputs[0], outputs[0]
    if len(data.shape) < 2 or len(output.shape) != len(data.shape) - 1:
        return f"input rank {len(data.shape)} and output rank {len(output.shape)}: TFLite Micro needs n >= 2 and n - 1"
    frames, size = data.shape[-2:]
    expected = (*data.shape[:-2], frames * step)
    return _first(_out_of(step, 1, size, "frame_step"),
                  None if output.shape == expected else f"output {list(output.shape)}, not {list(expected)}")


_CHECKS = {
    "SignalWindow": _window, "SignalFftAutoScale": _fft_auto_scale, "SignalRfft": _rfft, "SignalIrfft": _irfft,
    "SignalEnergy": _energy, "SignalFilterBank": _filter_bank, "SignalFilterBankSquareRoot": _filter_bank_square_root,
    "SignalFilterBankSpectralSubtraction": _spectral_subtraction, "SignalPCAN": _pcan,
    "SignalFilterBankLog": _filter_bank_log, "SignalDelay": _delay, "SignalFramer": _framer,
    "SignalStacker": _stacker, "SignalOverlapAdd": _overlap_add,
}
