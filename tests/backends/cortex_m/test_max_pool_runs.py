"""int8 MAX_POOL_2D written as runs over a pixel's channels (tvm_ext/kernels/copy_runs.py: max_pool2d_runs) on a
DSP core (an unpadded window of at most 9 taps one call of the bundle's window maximum per pixel, a padded one
each valid tap's run one call of its int8 maximum of two runs; SSUB8 + SEL, four channels a word) is bit-exact
with TFLite Micro: windows of 4 to 16 taps, strides 1 to 3, VALID and SAME padding (a padded tap is skipped),
a fused RELU and RELU6 (the clamp), 6 channels (a tail of two), two images. A core without the DSP extension
keeps the element-wise kernel (tvm_ext/kernels/pool.py), no call of the helper.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from tflite_builder import ModelBuilder, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

SAME, VALID = 0, 1
RELU, RELU6 = 1, 3
POOLS = (  # name, window, stride, padding, activation, output rows and columns of a 7 x 9 input
    ("pool_2x2_valid", (2, 2), 2, VALID, 0, (3, 4)),
    ("pool_3x3_same_relu", (3, 3), 2, SAME, RELU, (4, 5)),
    ("pool_2x3_same_relu6", (2, 3), 1, SAME, RELU6, (7, 9)),
    ("pool_4x4_same", (4, 4), 3, SAME, 0, (3, 3)),  # 16 taps: loops over the window, padded
    ("pool_4x3_valid", (4, 3), 1, VALID, 0, (4, 7)),  # 12 taps: loops over the window, unpadded
)


def _pools_model() -> ModelBuilder:
    """x (2, 7, 9, 6) -> each pool of POOLS, one output each."""
    built = ModelBuilder()
    quant = Quantization((0.05,), (-7,))
    data = built.add(Tensor("x", (2, 7, 9, 6), "int8", quant))
    built.inputs.append(data)
    for name, (fh, fw), stride, padding, activation, out_hw in POOLS:
        options = Options("Pool2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride,
                                            "FilterHeight": fh, "FilterWidth": fw,
                                            "FusedActivationFunction": activation})
        built.outputs.append(built.op("MAX_POOL_2D", (data,), Tensor(name, (2, *out_hw, 6), "int8", quant), options))
    return built


@pytest.mark.skipif(bool(missing_tools()), reason="needs arm-none-eabi-gcc and qemu-system-arm")
@pytest.mark.parametrize("target", ["cortex-m4f", "cortex-m0plus"])
def test_max_pools_as_runs_are_bit_exact_with_tflite_micro(tmp_path, target):
    """The bundle's self-test under QEMU (TFLite Micro's outputs on its cases) passes with no error."""
    model = tmp_path / "pools.tflite"
    model.write_bytes(build(_pools_model().model()))
    bundle = compile(model, target, tmp_path / "out")
    selftest = bundle.selftest
    assert selftest.passed and selftest.where.startswith("mps2-") and set(selftest.max_errors) == {0}, selftest.output
    assert len(selftest.outputs) == len(POOLS), selftest.output
    kernels_c = next((tmp_path / "out").glob("*_kernels.c")).read_text()
    pools = {name: body for name, body in kernel_bodies(kernels_c).items() if "max_pool" in name}
    assert len(pools) == len(POOLS), list(kernel_bodies(kernels_c))
    for name, body in pools.items():
        # unpadded windows: one call of the window maximum per pixel; padded: one call per valid tap
        helper = "_max_s8_window(" if name.endswith(("2x3x4x6", "2x4x7x6")) else "_max_s8("
        assert (helper in body) == (target == "cortex-m4f"), (name, body)
