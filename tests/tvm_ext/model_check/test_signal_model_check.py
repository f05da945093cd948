"""The model check on TFLite Micro's signal-library operators: it takes them as TFLite Micro's resolver does, by
custom code, and refuses in one line naming the layer what their kernels would run out of bounds (TFLite Micro
checks only types and ranks): options that are not the attribute map the kernel reads by position, shifts
by the width or more, FFT lengths its KISS FFT build cannot transform, channel tables past the spectrum."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audio_preprocessor_models import TYPE_CODES, audio_preprocessor, options, single_operator
from conftest import run_cli
from tflite_builder import Model, Operator, Tensor, build
from tvm_ext.model_check import ErrorKind, ModelError, check_model_data


def _refusal(model: bytes) -> ModelError:
    with pytest.raises(ModelError) as raised:
        check_model_data("op.tflite", model)
    return raised.value


def _window(**attributes) -> bytes:
    weights = np.ones(8, np.int16)
    return single_operator("SignalWindow", [("x", (8,), "int16", None), ("w", (8,), "int16", weights)],
                           [("y", (8,), "int16")], **attributes)


def test_the_micro_speech_preprocessor_passes_and_names_its_operators() -> None:
    facts = check_model_data("pp.tflite", audio_preprocessor())
    assert {"SignalWindow", "SignalRfft", "SignalFilterBankSpectralSubtraction", "SignalPCAN"} <= facts.op_types()


@pytest.mark.parametrize("model, message", [
    (_window(shift=32), "SignalWindow at layer 'y': shift = 32 is outside 0..31"),
    (_window(shift=2, extra=1), "custom options name extra, shift; TFLite Micro reads shift by position"),
    (_window(), "custom options name nothing; TFLite Micro reads shift by position"),
    (_window(shift=2.5), "option shift is not an inline integer or boolean"),
    (_window(shift=2**40), "option shift = 1099511627776 does not fit int32"),
    (single_operator("SignalRfft", [("x", (14,), "int16", None)], [("y", (16,), "int16")], T=7, fft_length=14),
     "fft_length = 14: half of it has the prime factor 7"),
    (single_operator("SignalRfft", [("x", (8,), "int16", None)], [("y", (10,), "int32")], T=TYPE_CODES["int16"],
                     fft_length=8), "output 0 is int32, TFLite Micro's kernel reads int16"),
    (single_operator("SignalRfft", [("x", (8,), "int16", None)], [("y", (10,), "int16")], T=9, fft_length=8),
     "attribute T = 9 is not one of int16, int32, float32"),
    (single_operator("SignalEnergy", [("x", (8,), "int16", None)], [("y", (4,), "uint32")], start_index=0,
                     end_index=5), "bins 0..5 are not within the 4 of the spectrum"),
    (single_operator("SignalStacker", [("x", (2,), "int16", None)], [("y", (6,), "int16"), ("v", (), "bool")],
                     num_channels=2, stacker_left_context=1, stacker_right_context=1, stacker_step=4),
     "stacker_step = 4 is outside 1..3"),
])
def test_refused_in_one_line_naming_the_layer(model: bytes, message: str) -> None:
    error = _refusal(model)
    assert error.kind is ErrorKind.OPERATOR
    assert message in str(error) and "\n" not in str(error)


def test_options_that_are_not_a_flexbuffer_map_are_refused() -> None:
    weights = np.ones(8, np.int16)
    tensors = [Tensor("x", (8,), "int16"), Tensor("w", (8,), "int16", data=weights), Tensor("y", (8,), "int16")]
    for garbage in (b"\x01", b"\xff" * 7, options(shift=[1, 2])[:-1] + b"\x00", bytes(flatten_vector())):
        op = Operator("CUSTOM", (0, 1), (2,), custom_code="SignalWindow", custom_options=garbage)
        error = _refusal(build(Model(tensors, [op], (0,), (2,))))
        assert error.kind is ErrorKind.OPERATOR and "SignalWindow at layer 'y'" in str(error), str(error)


def flatten_vector() -> bytes:
    """A flexbuffer vector (not a map) of one integer."""
    from flatbuffers import flexbuffers

    return bytes(flexbuffers.Dumps([12]))


def test_filter_bank_channel_tables_must_be_constants_within_the_spectrum() -> None:
    def bank(starts: np.ndarray | None) -> bytes:
        tables = [("w", (4,), "int16", np.ones(4, np.int16)), ("uw", (4,), "int16", np.ones(4, np.int16)),
                  ("fs", (3,), "int16", starts), ("ws", (3,), "int16", np.zeros(3, np.int16)),
                  ("cw", (3,), "int16", np.full(3, 2, np.int16))]
        return single_operator("SignalFilterBank", [("e", (5,), "uint32", None), *tables], [("y", (2,), "uint64")],
                               num_channels=2)

    assert "not constants" in str(_refusal(bank(None)))
    assert "channel 2's band (2 bins from bin 4" in str(_refusal(bank(np.array([0, 1, 4], np.int16))))
    check_model_data("bank.tflite", bank(np.array([0, 1, 3], np.int16)))


def test_the_command_exits_2_naming_the_layer(tmp_path: Path) -> None:
    model = tmp_path / "window.tflite"
    model.write_bytes(_window(shift=40))
    result = run_cli(str(model), "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith("SignalWindow at layer 'y': shift = 40 is outside 0..31")
