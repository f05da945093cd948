"""TFLite Micro's signal-library custom operators (SignalWindow, SignalRfft, SignalFilterBank, ...) -> Relax:
each one `call_tir` of its TE kernel (`tvm_ext.kernels.signal`, which calls the bundle's C helper, bit-exact
with TFLite Micro). TVM has no converter for any of them.

The operator's custom options are read as TFLite Micro reads them (`model_check.signal_ops.read_options`; the
model check has already refused what TFLite Micro cannot run, `operator_problem`). An operator with state
(spectral subtraction's noise estimate, the sample FIFOs of Delay, OverlapAdd, Framer and Stacker) gets it as
constant operands holding the state's value after a reset, marked with STATE_OPERANDS_ATTR: the plan makes them
the bundle's static state, rewritten in place by the kernel from one run to the next, as TFLite Micro's
persistent buffers are (and restored by `<model>_reset()`, as by its `Reset`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from tvm import relax

from tvm_ext.kernels import signal as kernels
from tvm_ext.layers import OPAQUE_PATTERN, STATE_OPERANDS_ATTR
from tvm_ext.frontend.converter_table import keyed_by
from tvm_ext.model_check.signal_ops import SIGNAL_OPERATORS, TFLITE_TYPE_CODES, SignalOptionsError, read_options

from .refusal import OperatorRefused



def custom_code(converter, op) -> str:
    """The custom code of a CUSTOM operator (its name in TFLite Micro's op resolver), "" for a builtin."""
    from tflite.BuiltinOperator import BuiltinOperator

    code = converter.model.OperatorCodes(op.OpcodeIndex())
    if max(code.DeprecatedBuiltinCode(), code.BuiltinCode()) != BuiltinOperator.CUSTOM:
        return ""
    return (code.CustomCode() or b"").decode("utf-8", errors="replace")


def _options(converter, op, code: str) -> dict[str, int]:
    try:
        return read_options(SIGNAL_OPERATORS[code], bytes(op.CustomOptionsAsNumpy()) if op.CustomOptionsLength()
                            else b"")
    except SignalOptionsError as err:
        raise OperatorRefused(f"{code}: {err}") from None


def _kernel_call(converter, kernel: Callable, args: list[relax.Expr], **static) -> relax.Call:
    """The call_tir of the TE `kernel` on `args` (its keyword `static` facts compiled in), its PrimFunc
    opaque and, for a stateful kernel, marked with the operands it rewrites."""
    call = converter.bb.call_te(kernel, *args, primfunc_name_hint=kernel.__name__, **static)
    gvar = call.args[0]
    attrs = {"op_pattern": OPAQUE_PATTERN}
    if kernel in kernels.STATE_OPERANDS:
        attrs[STATE_OPERANDS_ATTR] = kernels.STATE_OPERANDS[kernel]
    converter.bb.update_func(gvar, converter.bb.get()[gvar].with_attrs(attrs))
    return call


def _state(shape: tuple[int, ...], dtype: str, reset_value: int = 0) -> relax.Constant:
    """A state operand: its value after a reset (at least one element: the plan keeps no empty state)."""
    return relax.const(np.full((max(1, int(np.prod(shape))),), reset_value, dtype))


def convert_signal(converter, op, unwritten: dict[int, np.ndarray]) -> relax.Call:
    """The Relax call of the signal-library operator `op`, for TVM's TFLite `OperatorConverter` `converter`;
    records in `unwritten` the masks of `first_run_unwritten` by output tensor index."""
    code = custom_code(converter, op)
    options = _options(converter, op, code)
    args = [converter.get_tensor_expr(tensor) for tensor in converter.get_input_tensors(op)]
    outputs = converter.get_output_tensors(op)
    for tensor, mask in zip(outputs, first_run_unwritten(code, options, [_shape(a) for a in args])):
        if mask is not None and mask.any():
            unwritten[tensor.tensor_idx] = mask
    return SIGNAL_CONVERTERS[code](converter, args, options)


def first_run_unwritten(code: str, options: dict[str, int], input_shapes: list[tuple[int, ...]]) -> list:
    """Per output of the operator, the bool mask of the elements TFLite Micro's kernel leaves unwritten on its
    first invocation after a reset (None: it writes them all): Energy's bins outside start..end; Framer's
    frames not complete yet (which the first invocation's count of samples decides); all of Stacker's output
    while its right context is not there yet. The bundle's kernels write 0 there."""
    if code == "SignalEnergy":
        mask = np.ones(input_shapes[0][-1] // 2, bool)
        mask[options["start_index"]:options["end_index"]] = False
        return [mask]
    if code == "SignalFramer":
        size, step = options["frame_size"], options["frame_step"]
        held = size - step if options["prefill"] else 0
        frames = input_shapes[0][-1] // step
        incomplete = np.array([held + (f + 1) * step < size for f in range(frames)])
        shape = (*input_shapes[0][:-1], frames, size)
        return [np.broadcast_to(incomplete[:, None], shape).copy(), None]
    if code == "SignalStacker":
        size = options["num_channels"] * (options["stacker_left_context"] + options["stacker_right_context"] + 1)
        return [np.full(size, options["stacker_right_context"] > 0), None]
    return [None] * 2


def _shape(expr: relax.Expr) -> tuple[int, ...]:
    return tuple(int(d) for d in expr.ty.shape.values)


def _window(converter, args, options):
    return _kernel_call(converter, kernels.signal_window, args, shift=options["shift"])


def _fft_auto_scale(converter, args, options):
    return _kernel_call(converter, kernels.signal_fft_auto_scale, args)


def _energy(converter, args, options):
    return _kernel_call(converter, kernels.signal_energy, args, start_index=options["start_index"],
                        end_index=options["end_index"])


def _filter_bank(converter, args, options):
    return _kernel_call(converter, kernels.signal_filter_bank, args, num_channels=options["num_channels"])


def _filter_bank_square_root(converter, args, options):
    return _kernel_call(converter, kernels.signal_filter_bank_square_root, args)


def _spectral_subtraction(converter, args, options):
    fields = {name: options[name] for name in ("smoothing", "one_minus_smoothing", "alternate_smoothing",
                                               "alternate_one_minus_smoothing", "min_signal_remaining",
                                               "smoothing_bits", "spectral_subtraction_bits")}
    noise = _state(_shape(args[0]), "uint32")
    return _kernel_call(converter, kernels.signal_spectral_subtraction, [args[0], noise], **fields,
                        clamping=bool(options["clamping"]))


def _pcan(converter, args, options):
    return _kernel_call(converter, kernels.signal_pcan, args, snr_shift=options["snr_shift"])


def _filter_bank_log(converter, args, options):
    table = relax.const(kernels.log_lut())
    return _kernel_call(converter, kernels.signal_filter_bank_log, [args[0], table],
                        output_scale=options["output_scale"], input_correction_bits=options["input_correction_bits"])


def _fft_tables(options, inverse: bool) -> list[relax.Constant]:
    fft_length = options["fft_length"]
    twiddles, supers = kernels.kiss_twiddles(fft_length, TFLITE_TYPE_CODES[options["T"]], inverse)
    return [relax.const(twiddles), relax.const(supers), relax.const(kernels.fft_factors(fft_length))]


def _rfft(converter, args, options):
    return _kernel_call(converter, kernels.signal_rfft, [args[0], *_fft_tables(options, inverse=False)],
                        fft_length=options["fft_length"])


def _irfft(converter, args, options):
    return _kernel_call(converter, kernels.signal_irfft, [args[0], *_fft_tables(options, inverse=True)],
                        fft_length=options["fft_length"])


def _delay(converter, args, options):
    shape = _shape(args[0])
    rows = int(np.prod(shape)) // shape[-1]
    state = _state((rows * options["delay_length"],), "int16")
    return _kernel_call(converter, kernels.signal_delay, [args[0], state], delay_length=options["delay_length"])


def _overlap_add(converter, args, options):
    shape = _shape(args[0])
    rows = int(np.prod(shape)) // (shape[-2] * shape[-1])
    state = _state((rows * shape[-1],), TFLITE_TYPE_CODES[options["T"]])
    return _kernel_call(converter, kernels.signal_overlap_add, [args[0], state], frame_step=options["frame_step"])


def _framer(converter, args, options):
    size, step = options["frame_size"], options["frame_step"]
    shape = _shape(args[0])
    rows = int(np.prod(shape)) // shape[-1]
    state = _state((rows * kernels.framer_capacity(size, step),), "int16")
    counts = _state((1,), "int32", size - step if options["prefill"] else 0)
    return _kernel_call(converter, kernels.signal_framer, [args[0], state, counts], frame_size=size, frame_step=step)


def _stacker(converter, args, options):
    contexts = options["stacker_left_context"] + options["stacker_right_context"] + 1
    state = _state((options["num_channels"] * contexts,), "int16")
    counts = _state((2,), "int32")
    return _kernel_call(converter, kernels.signal_stacker, [args[0], state, counts], **options)


# Keyed by the model check's list of the signal library's operators, the one place their codes are named: the
# codes the frontend converts are this table's keys.
SIGNAL_CONVERTERS = keyed_by(SIGNAL_OPERATORS, {
    "SignalWindow": _window, "SignalFftAutoScale": _fft_auto_scale, "SignalEnergy": _energy,
    "SignalFilterBank": _filter_bank, "SignalFilterBankSquareRoot": _filter_bank_square_root,
    "SignalFilterBankSpectralSubtraction": _spectral_subtraction, "SignalPCAN": _pcan,
    "SignalFilterBankLog": _filter_bank_log, "SignalRfft": _rfft, "SignalIrfft": _irfft, "SignalDelay": _delay,
    "SignalOverlapAdd": _overlap_add, "SignalFramer": _framer, "SignalStacker": _stacker,
}, "the TFLite signal converters")
