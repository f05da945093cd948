"""MAC layers of one output row on cortex-m4f: a one-pixel convolution as stacked rows, a few-output
FULLY_CONNECTED padded where its MACs pay.

A CONV_2D whose 1x1 window reads its whole input of one pixel (a classifier head over a pooled image, a
squeeze-excitation's convolutions) is a FULLY_CONNECTED in all but name: on cortex-m4f the int8 lowering writes it as
that layer's kernel over the pixel (`tvm_ext.transform.int8.conv._one_pixel_rows`, `tvm_ext.kernels.dense.
fully_connected_int8` of NHWC data) with stacked weights, so it runs the fused fully connected tiles
(`backends.cortex_m.schedules.fc_tiles`: two SMLAD and one SXTB16 per four MACs) instead of the convolution's
channel tiles, where its MACs pay that helper's code (`fc_tiles.one_pixel_rows_pay`; mobilenet_v3s_min_050_80's 288 ->
1024 head 1.61 -> 1.19 instructions per MAC). Bit for bit with TFLite Micro under QEMU mps2-an386 and in the host
build, warning-free; a small one keeps the convolution's kernel."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_border_split import kernels_bit_exact_everywhere  # noqa: E402
from test_padded_conv_channels import DUAL_MAC, SCALAR_MAC, Conv, _model, layer_sweep  # noqa: E402
from test_requantize_epilogue import needs_cross_tools  # noqa: E402

FC_TILES = "_fc_tiles_s8x4"


@needs_cross_tools
def test_a_large_one_pixel_convolution_runs_the_stacked_rows_bit_exactly(tmp_path):
    layers = [Conv(1, out_channels=96), Conv(1, out_channels=16)]
    kernels = kernels_bit_exact_everywhere(tmp_path, "one_pixel_rows", _model((1, 1, 1, 1024), layers))
    convolutions = {name: "\n".join(body) for name, body in kernels.items() if "_conv_2d_" in name}
    (large,) = (body for name, body in convolutions.items() if name.endswith("_96"))
    (small,) = (body for name, body in convolutions.items() if name.endswith("_16"))
    assert FC_TILES in large and not SCALAR_MAC.search(large), large
    assert FC_TILES not in small and DUAL_MAC.search(small), small  # 16 k MACs: the convolution's tiles
    manifest = json.loads((tmp_path / "m4f" / "manifest.json").read_text())
    calls = {call["kernel"]: call for call in manifest["layer_report"]["calls"]}
    (head,) = (call for kernel, call in calls.items() if kernel.endswith("_96"))
    assert head["macs"] == 1024 * 96 and head["kind"]["name"] == "convolution", head


@needs_cross_tools
def test_a_few_output_fully_connected_layer_is_padded_where_its_macs_pay_bit_exactly(tmp_path):
    """A FULLY_CONNECTED of fewer channels than a tile (a two-class head) keeps its scalar loop unless its MACs pay
    the padded kernel's code at the one price of code (`conv_tiles.one_row_padding_pays`): 2 channels over 8192
    inputs take the stacked MAC (zero rows to four channels), 2 over 256 keep the loop."""
    kernels = {}
    for depth in (8192, 256):
        sweep = layer_sweep._Sweep((1, depth), seed=29)
        sweep.fully_connected(2)
        (tmp_path / str(depth)).mkdir()
        found = kernels_bit_exact_everywhere(tmp_path / str(depth), f"few_{depth}", layer_sweep.build(sweep.model()))
        (kernels[depth],) = ("\n".join(body) for name, body in found.items() if "_fully_connected_" in name)
    assert "_stacked_mac_s8x4(" in kernels[8192] and not SCALAR_MAC.search(kernels[8192]), kernels[8192]
    assert SCALAR_MAC.search(kernels[256]) and "_stacked_mac_s8x4(" not in kernels[256], kernels[256]


@needs_cross_tools
def test_one_pixel_convolutions_that_pay_together_share_the_stacked_rows_bit_exactly(tmp_path):
    """Two one-pixel convolutions of 576 -> 128 channels (74 k MACs each: a squeeze-excitation's size) save together
    what the stacked rows' helper costs, which they share (`fc_tiles.one_pixel_rows_pay` over the model's one-pixel
    convolutions); one alone keeps the convolution's tiles."""
    pair = kernels_bit_exact_everywhere(tmp_path, "pair", _model(
        (1, 1, 1, 576), [Conv(1, out_channels=128), Conv(1, out_channels=128)]))
    convolutions = ["\n".join(body) for name, body in pair.items() if "_conv_2d_" in name]
    assert convolutions and all(FC_TILES in body for body in convolutions), convolutions  # one kernel, two calls
    (tmp_path / "alone").mkdir()
    alone = kernels_bit_exact_everywhere(tmp_path / "alone", "alone", _model((1, 1, 1, 576), [Conv(1, out_channels=128)]))
    (body,) = ("\n".join(body) for name, body in alone.items() if "_conv_2d_" in name)
    assert FC_TILES not in body and DUAL_MAC.search(body), body
