"""Every constant is stored once however many calls read it, and identical constants (same dtype, shape and
bytes, also after our compile-time transforms: folded biases, requantization multipliers, tables) once
(tvm_ext/plan/constant_pool.py): an unrolled RNN's steps cost one step's weights, and the bundle still computes
TFLite Micro's bits."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from tflite_builder import ModelBuilder, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402
from tvm_ext.plan.constant_pool import ConstantPool  # noqa: E402

UNITS = 24
_TANH_OUTPUT = Quantization((1 / 128,), (0,))  # TFLite's fixed int8 quantization of TANH's output
_WEIGHT_SCALES = tuple(float(s) for s in np.random.default_rng(31).uniform(0.004, 0.02, UNITS))


def _unrolled_rnn(steps: int, weights_shared: bool) -> bytes:
    """`steps` steps of h = TANH(FULLY_CONNECTED(h, W, b)), as TFLite's converter unrolls a simple RNN: every step
    reads one W and b tensor (`weights_shared`), else its own copy of them (other tensors, other buffers, the
    same bytes). Every step's tensors are quantized alike, so our per-call constants are equal too."""
    rng = np.random.default_rng(31)
    weights = rng.integers(-127, 128, (UNITS, UNITS)).astype(np.int8)
    bias = rng.integers(-2000, 2000, UNITS).astype(np.int32)
    model = ModelBuilder()
    hidden = model.add(Tensor("input", (1, UNITS), "int8", _TANH_OUTPUT))
    model.inputs.append(hidden)

    def weight_and_bias(step: int) -> tuple[int, int]:
        w = model.add(Tensor(f"rnn/kernel{step}", weights.shape, "int8",
                             Quantization(_WEIGHT_SCALES, (0,) * UNITS, 0), weights))
        b = model.add(Tensor(f"rnn/bias{step}", bias.shape, "int32",
                             Quantization(tuple(s / 128 for s in _WEIGHT_SCALES), (0,) * UNITS), bias))
        return w, b

    shared = weight_and_bias(0) if weights_shared else None
    for step in range(steps):
        w, b = shared or weight_and_bias(step)
        dense = model.op("FULLY_CONNECTED", (hidden, w, b),
                         Tensor(f"rnn/step{step}/dense", (1, UNITS), "int8", Quantization((0.04,), (3,))),
                         Options("FullyConnectedOptions", {}))
        hidden = model.op("TANH", (dense,), Tensor(f"rnn/step{step}/tanh", (1, UNITS), "int8", _TANH_OUTPUT))
    model.outputs.append(hidden)
    return build(model.model())


def _weight_bytes(model: bytes, folder: Path) -> int:
    """The weight bytes of `model`'s bundle, after its self-test passed bit-exact with TFLite Micro; the
    bundle's header, manifest and weights file agree on them."""
    folder.mkdir()
    path = folder / "rnn.tflite"
    path.write_bytes(model)
    bundle = compile(path, "lowpower", folder / "out")
    assert bundle.selftest.passed and all(output.bit_identical for output in bundle.selftest.reports), \
        bundle.selftest.output
    header = (bundle.out_dir / f"{bundle.plan.model}.h").read_text()
    assert re.search(rf"_WEIGHT_BYTES {bundle.weight_bytes}u\b", header), header
    weights_c = (bundle.out_dir / f"{bundle.plan.model}_weights.c").read_text()
    assert len(re.findall(r"^\w+_ALIGNED\(\d+\) const ", weights_c, re.M)) == len(bundle.plan.constants())
    return bundle.weight_bytes


@pytest.mark.parametrize("weights_shared", [True, False], ids=["one-tensor-read-by-every-step",
                                                                "a-copy-per-step-same-bytes"])
def test_unrolled_steps_cost_one_steps_weights(tmp_path: Path, weights_shared: bool) -> None:
    one_step = _weight_bytes(_unrolled_rnn(1, weights_shared), tmp_path / "one")
    assert one_step >= UNITS * UNITS  # the step's weights are there
    assert _weight_bytes(_unrolled_rnn(4, weights_shared), tmp_path / "four") == one_step


def test_equal_bytes_of_another_type_or_shape_stay_apart() -> None:
    pool = ConstantPool()
    int8 = np.arange(-4, 4, dtype=np.int8)
    first = pool.add("w0", int8, ["fc0 (FULLY_CONNECTED)"])
    assert pool.add("w1", int8.copy(), ["fc1 (FULLY_CONNECTED)"]) == first
    assert pool.add("w2", int8.view(np.uint8), ["fc2"]) == "w2"
    assert pool.add("w3", int8.reshape(2, 4), ["fc3"]) == "w3"
    assert pool.add("w4", np.array([0.0], np.float32), ["a"]) == "w4"
    assert pool.add("w5", np.array([-0.0], np.float32), ["b"]) == "w5"  # equal values, other bytes
    assert list(pool.arrays) == ["w0", "w2", "w3", "w4", "w5"]
    assert pool.readers_label(first) == "fc0 (FULLY_CONNECTED); fc1 (FULLY_CONNECTED)"


def test_a_constant_read_by_many_layers_names_three() -> None:
    pool = ConstantPool()
    table = np.zeros(256, np.int8)
    for step in range(40):
        name = pool.add(f"l{step}_table", table, [f"tanh{step} (TANH)"])
    assert name == "l0_table" and list(pool.arrays) == ["l0_table"]
    assert pool.readers_label(name) == "tanh0 (TANH); tanh1 (TANH); tanh2 (TANH) and 37 more"


def test_auto_quantize_counts_equal_float_constants_once() -> None:
    """`--quantize auto` weighs the float weights as the bundle stores them: two equal constants once."""
    from tvm import relax

    from tvm_ext.layers import constant_bytes

    weights = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8), "float32"))
    with builder.function("main", [x]):
        with builder.dataflow():
            first = builder.emit(relax.op.matmul(x, relax.const(weights)))
            second = builder.emit(relax.op.matmul(first, relax.const(weights.copy())))
            other = builder.emit(relax.op.add(second, relax.const(-weights)))
            result = builder.emit_output(other)
        builder.emit_func_output(result)
    assert constant_bytes(builder.get()["main"]) == 2 * weights.nbytes
