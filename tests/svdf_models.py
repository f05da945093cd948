"""Builds one-operator TFLite SVDF models (int8 input and output, int16 or int8 state) for the SVDF tests, with
fuzz_corpus.build_tflite (SVDFOptions through its `builtin_options`, the state a variable tensor). Scales are
picked so that TFLM's Prepare accepts the model (bias scale = state scale x time weight scale). A model without
bias gets an all-zero bias tensor instead of an omitted (-1) input: TFLM's Prepare reads the bias's scale
unconditionally and crashes on an omitted one (tflite-micro issue #1751), and an all-zero bias is what its
integer kernel adds when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

import fuzz_corpus
import numpy as np

_TYPE_CODES = {"int32": 2, "int16": 7, "int8": 9}


@dataclass(frozen=True)
class SvdfSpec:
    """One SVDF layer: shapes, state dtype, rank, bias, fused activation and the seed of its random weights."""

    batch: int = 1
    inputs: int = 6
    units: int = 3
    rank: int = 1
    memory: int = 4
    state_dtype: str = "int16"
    bias: bool = True  # False: an all-zero bias tensor (see the module's docstring)
    relu: bool = False
    seed: int = 0

    @property
    def filters(self) -> int:
        return self.units * self.rank


@dataclass(frozen=True)
class _Tensor:
    shape: tuple[int, ...]
    dtype: str
    scale: float
    zero_point: int
    data: bytes = b""
    variable: bool = False


def svdf_tensors(spec: SvdfSpec) -> list[_Tensor]:
    """input, weights_feature, weights_time, bias, state, output: in the order of the operator's inputs."""
    rng = np.random.default_rng(spec.seed)
    state_scale, time_scale, output_scale = (0.004, 0.003, 1.0) if spec.state_dtype == "int16" else (0.6, 0.01, 0.5)
    state_zero_point = 0 if spec.state_dtype == "int16" else int(rng.integers(-20, 20))
    low, high = (-2000, 2000) if spec.state_dtype == "int16" else (-127, 127)
    feature = rng.integers(-127, 128, (spec.filters, spec.inputs), dtype=np.int8)
    time = rng.integers(low, high, (spec.filters, spec.memory)).astype(spec.state_dtype)
    bias = rng.integers(-300, 300, spec.units).astype("<i4") * int(spec.bias)
    return [
        _Tensor((spec.batch, spec.inputs), "int8", 0.06, int(rng.integers(-128, 0))),
        _Tensor(feature.shape, "int8", 0.009, 0, feature.tobytes()),
        _Tensor(time.shape, spec.state_dtype, time_scale, 0, time.astype("<" + time.dtype.str[1:]).tobytes()),
        _Tensor((spec.units,), "int32", float(np.float32(state_scale) * np.float32(time_scale)), 0, bias.tobytes()),
        _Tensor((spec.batch, spec.filters * spec.memory), spec.state_dtype, state_scale, state_zero_point,
                variable=True),
        _Tensor((spec.batch, spec.units), "int8", output_scale, int(rng.integers(-10, 10))),
    ]


def build_svdf_model(spec: SvdfSpec) -> bytes:
    """The .tflite bytes of ``input -> SVDF -> output`` as `spec` describes it."""
    import tflite

    tensors = svdf_tensors(spec)
    buffers = [b""] + [t.data for t in tensors if t.data]
    buffer_of = iter(range(1, len(buffers)))

    def options(b) -> tuple[int, int]:
        tflite.SVDFOptionsStart(b)
        tflite.SVDFOptionsAddRank(b, spec.rank)
        tflite.SVDFOptionsAddFusedActivationFunction(b, tflite.ActivationFunctionType.RELU if spec.relu else 0)
        return tflite.BuiltinOptions.SVDFOptions, tflite.SVDFOptionsEnd(b)

    return fuzz_corpus.build_tflite(fuzz_corpus.TinyTflite(
        opcodes=[(tflite.BuiltinOperator.SVDF, 3, None)],
        tensors=[fuzz_corpus.TinyTensor(f"svdf_t{index}", t.shape, _TYPE_CODES[t.dtype],
                                        next(buffer_of) if t.data else 0, (t.zero_point,), t.scale, t.variable)
                 for index, t in enumerate(tensors)],
        operators=[fuzz_corpus.TinyOperator(0, (0, 1, 2, 3, 4), (5,), builtin_options=options)],
        inputs=(0,), outputs=(5,), buffers=buffers,
    ))
