"""The self-test's embedded cases sit in the weights' region of the emulated board (`.cases` of the Cortex-M
link.ld), not in its boot memory: mps3-an547 (cortex-m55) boots from 512 KiB, and four cases of a 224x224x3 int8
image (588 KiB of inputs, within the self-test's 1 MiB of cases) overflowed it, so a valid model's bundle did not
link (exit 3; the session-26 unseen set's float mbv3_like_60x44 under --validate, whose driver embeds its samples
the same way)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tflite")
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

from emulator.tools import REQUIRED_TOOLS  # noqa: E402
from required_tools import require_tools  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

require_tools(REQUIRED_TOOLS)

SIZE = 224


def _large_input_pool() -> Model:
    """One int8 MAX_POOL_2D (2x2, stride 2) of a 224x224x3 image: large inputs, no MACs (four cases)."""
    quant = Quantization((0.02,), (-5,))
    tensors = [Tensor("image", (1, SIZE, SIZE, 3), "int8", quant),
               Tensor("pooled", (1, SIZE // 2, SIZE // 2, 3), "int8", quant)]
    pool = Operator("MAX_POOL_2D", (0,), (1,), Options("Pool2DOptions", {
        "Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2}))
    return Model(tensors, [pool], (0,), (1,))


def test_four_cases_of_a_large_input_link_and_pass_on_the_cortex_m55_board(tmp_path):
    path = tmp_path / "large_input.tflite"
    path.write_bytes(build(_large_input_pool()))
    bundle = compile(path, "cortex-m55", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["selftest"]["cases"] == 4
    link = (bundle.out_dir / "cortex_m" / "link.ld").read_text()
    assert ".cases : ALIGN(4) { *selftest.*(.rodata .rodata.*) } > CONSTANTS" in link
