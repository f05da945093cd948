"""TensorFlow's form of a dilated convolution, SPACE_TO_BATCH_ND -> (reshapes) -> CONV_2D or DEPTHWISE_CONV_2D ->
(reshapes) -> BATCH_TO_SPACE_ND, as TF 2.21's converter writes every Keras Conv1D with dilation_rate > 1: the
models here are built operator by operator in the form it writes (the batched tensors' batch written as 1), and
compile to one dilated convolution each (tvm_ext/frontend/tflite_ops/dilated_convolution.py), bit-exactly with
TFLite Micro run on the file with its run-time batches written in (int8) and with LiteRT (float)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tflite

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402

from tvm_ext.compile import CompileError, compile  # noqa: E402
from tvm_ext.model_check import check_model  # noqa: E402
from tvm_ext.model_check.dilated_convolutions import with_run_time_batches  # noqa: E402

VALID = 1
RELU = 1
_RNG = np.random.default_rng(27)


def _ints(*values: int) -> np.ndarray:
    return np.array(values, np.int32)


def _constant(built: ModelBuilder, name: str, values: np.ndarray) -> int:
    return built.add(Tensor(name, values.shape, str(values.dtype), data=values))


def _causal_conv1d(length: int = 15, dilation: int = 2) -> ModelBuilder:
    """Keras 3's int8 Conv1D(6, 3, padding="causal", dilation_rate=2, activation="relu") on (length, 4): PAD in
    front, SPACE_TO_BATCH_ND padding the end to a multiple of the block, EXPAND_DIMS, a VALID CONV_2D, RESHAPE,
    and BATCH_TO_SPACE_ND cropping what that padding added."""
    built = ModelBuilder()
    x_quant, y_quant = Quantization((0.05,), (-3,)), Quantization((0.1,), (-128,))
    x = built.add(Tensor("x", (1, length, 4), "int8", x_quant))
    built.inputs.append(x)
    front = 2 * dilation
    padded = built.op("PAD", (x, _constant(built, "causal", _ints(0, 0, front, 0, 0, 0).reshape(3, 2))),
                      Tensor("padded", (1, length + front, 4), "int8", x_quant))
    end = -(length + front) % dilation
    rows = (length + front + end) // dilation
    blocks = built.op("SPACE_TO_BATCH_ND", (padded, _constant(built, "block", _ints(dilation)),
                                            _constant(built, "pads", _ints(0, end).reshape(1, 2))),
                      Tensor("blocks", (1, rows, 4), "int8", x_quant))
    wide = built.op("EXPAND_DIMS", (blocks, _constant(built, "axis", _ints(1).reshape(()))),
                    Tensor("wide", (1, 1, rows, 4), "int8", x_quant))
    weights = _RNG.integers(-127, 128, (6, 1, 3, 4)).astype(np.int8)
    scales = tuple(float(s) for s in _RNG.uniform(0.004, 0.01, 6))
    kernel = built.add(Tensor("kernel", weights.shape, "int8", Quantization(scales, (0,) * 6), data=weights))
    bias = built.add(Tensor("bias", (6,), "int32", Quantization(tuple(0.05 * s for s in scales), (0,) * 6),
                            data=_RNG.integers(-400, 400, 6).astype(np.int32)))
    conv = built.op("CONV_2D", (wide, kernel, bias), Tensor("conv", (1, 1, rows - 2, 6), "int8", y_quant),
                    Options("Conv2DOptions", {"Padding": VALID, "StrideH": 1, "StrideW": 1,
                                              "FusedActivationFunction": RELU}))
    narrow = built.op("RESHAPE", (conv, _constant(built, "shape", _ints(-1, rows - 2, 6))),
                      Tensor("narrow", (1, rows - 2, 6), "int8", y_quant))
    built.outputs.append(built.op(
        "BATCH_TO_SPACE_ND", (narrow, _constant(built, "block_out", _ints(dilation)),
                              _constant(built, "crops", _ints(0, end).reshape(1, 2))),
        Tensor("y", (1, length, 6), "int8", y_quant)))
    return built


def _same_depthwise(dtype: str) -> ModelBuilder:
    """DepthwiseConv2D(3, padding="same", dilation_rate=2) on (9, 7, 3): SPACE_TO_BATCH_ND pads 2 before and 3
    after each axis (the SAME padding and the end to a multiple of 2), BATCH_TO_SPACE_ND crops 1 after."""
    built = ModelBuilder()
    quant = Quantization((0.05,), (-3,)) if dtype == "int8" else None
    x = built.add(Tensor("x", (1, 9, 7, 3), dtype, quant))
    built.inputs.append(x)
    blocks = built.op("SPACE_TO_BATCH_ND", (x, _constant(built, "block", _ints(2, 2)),
                                            _constant(built, "pads", _ints(2, 3, 2, 3).reshape(2, 2))),
                      Tensor("blocks", (1, 7, 6, 3), dtype, quant))
    if dtype == "int8":
        weights = _RNG.integers(-127, 128, (1, 3, 3, 3)).astype(np.int8)
        kernel = built.add(Tensor("kernel", weights.shape, "int8", Quantization((0.01,) * 3, (0,) * 3, 3),
                                  data=weights))
        bias = built.add(Tensor("bias", (3,), "int32", Quantization((0.0005,) * 3, (0,) * 3),
                                data=_ints(10, -20, 30)))
    else:
        kernel = _constant(built, "kernel", _RNG.standard_normal((1, 3, 3, 3)).astype(np.float32))
        bias = _constant(built, "bias", _RNG.standard_normal(3).astype(np.float32))
    conv = built.op("DEPTHWISE_CONV_2D", (blocks, kernel, bias), Tensor("conv", (1, 5, 4, 3), dtype, quant),
                    Options("DepthwiseConv2DOptions", {"Padding": VALID, "StrideH": 1, "StrideW": 1,
                                                       "DepthMultiplier": 1}))
    built.outputs.append(built.op(
        "BATCH_TO_SPACE_ND", (conv, _constant(built, "block_out", _ints(2, 2)),
                              _constant(built, "crops", _ints(0, 1, 0, 1).reshape(2, 2))),
        Tensor("y", (1, 9, 7, 3), dtype, quant)))
    return built


def _with_run_time_batches(data: bytes) -> bytes | None:
    return with_run_time_batches(data, tflite.Model.GetRootAsModel(data, 0))


def _reference(bundle) -> str:
    return json.loads((bundle.out_dir / "manifest.json").read_text())["selftest"]["reference"]


def _written(built: ModelBuilder, tmp_path) -> object:
    path = tmp_path / "model.tflite"
    path.write_bytes(build(built.model()))
    return path


@pytest.mark.parametrize("target", ["lowpower", "cortex-m4f"])
def test_causal_dilated_conv1d_is_one_dilated_convolution_bit_exact_with_tflite_micro(tmp_path, target):
    bundle = compile(_written(_causal_conv1d(), tmp_path), target, tmp_path / "out")
    assert bundle.selftest.passed and all(r.bit_identical for r in bundle.selftest.reports), bundle.selftest.output
    assert "batches written in" in _reference(bundle)
    # The model's causal PAD, then one dilated convolution: the end padding to a multiple of the block feeds only
    # outputs the crop drops, and neither is computed.
    pad, conv = bundle.plan.calls
    assert pad.layers == ("padded (PAD)",) and conv.layers == ("conv (CONV_2D)",), bundle.plan.calls
    assert "_d1x2_15x6" in conv.kernel and conv.macs == 15 * 6 * 3 * 4, (conv.kernel, conv.macs)


def test_same_dilated_float_depthwise_pads_and_crops_as_litert(tmp_path):
    bundle = compile(_written(_same_depthwise("float32"), tmp_path), "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    assert _reference(bundle).startswith("LiteRT"), _reference(bundle)


def test_quantized_chain_whose_padding_outputs_read_is_refused_in_one_line(tmp_path):
    """TFLite Micro pads an int8 SPACE_TO_BATCH_ND with an offset it never sets, not the zero point: where kept
    outputs read that padding no reference computes the model as TensorFlow does."""
    with pytest.raises(CompileError) as refused:
        compile(_written(_same_depthwise("int8"), tmp_path), "lowpower", tmp_path / "out")
    message = str(refused.value)
    assert "\n" not in message and "layer blocks (SPACE_TO_BATCH_ND)" in message and "zero point -3" in message


def test_space_to_batch_framing_no_convolution_is_refused_by_the_check(tmp_path):
    built = ModelBuilder()
    x = built.add(Tensor("x", (1, 8, 4), "float32"))
    built.inputs.append(x)
    built.outputs.append(built.op("SPACE_TO_BATCH_ND", (x, _constant(built, "block", _ints(2)),
                                                        _constant(built, "pads", _ints(0, 0).reshape(1, 2))),
                                  Tensor("y", (2, 4, 4), "float32")))
    facts = check_model(_written(built, tmp_path), refuse_unsupported=False)
    (refusal,) = [op.refusal for op in facts.operators]
    assert refusal is not None and "dilated convolution" in refusal, refusal


def test_run_time_batches_are_written_into_the_chain_only(tmp_path):
    data = build(_causal_conv1d().model())

    def shapes(model: bytes) -> dict[str, tuple[int, ...]]:
        graph = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0)
        return {graph.Tensors(i).Name().decode(): tuple(graph.Tensors(i).ShapeAsNumpy().tolist())
                for i in range(graph.TensorsLength()) if graph.Tensors(i).ShapeLength()}

    before, after = shapes(data), shapes(_with_run_time_batches(data))
    changed = {name: (before[name], after[name]) for name in before if before[name] != after[name]}
    assert changed == {name: (before[name], (2, *before[name][1:])) for name in ("blocks", "wide", "conv", "narrow")}
    assert _with_run_time_batches(build(_same_depthwise("float32").model())) is not None
    single = ModelBuilder()
    x = single.add(Tensor("x", (1, 4), "float32"))
    single.inputs.append(x)
    single.outputs.append(single.op("RELU", (x,), Tensor("y", (1, 4), "float32")))
    assert _with_run_time_batches(build(single.model())) is None
