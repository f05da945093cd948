"""Conv and Gemm models of the ONNX backend test data (shipped in the onnx wheel) match onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnx.backend.test
import pytest

from onnxruntime_match import conformance
from tvm_ext.compile import CompileError, DoesNotFitError, compile

DATA = Path(onnx.backend.test.__file__).parent / "data"
CONVERTED = [
    "Conv1d", "Conv1d_dilated", "Conv1d_groups", "Conv1d_pad1", "Conv1d_pad1size1", "Conv1d_pad2",
    "Conv1d_pad2size1", "Conv1d_stride", "Conv2d", "Conv2d_depthwise", "Conv2d_depthwise_padded",
    "Conv2d_depthwise_strided", "Conv2d_depthwise_with_multiplier", "Conv2d_dilated", "Conv2d_groups",
    "Conv2d_groups_thnn", "Conv2d_no_bias", "Conv2d_padding", "Conv2d_strided", "Conv3d", "Conv3d_dilated",
    "Conv3d_dilated_strided", "Conv3d_groups", "Conv3d_no_bias", "Conv3d_stride", "Conv3d_stride_padding",
    "ConvTranspose2d", "ConvTranspose2d_no_bias", "Linear_no_bias",
]
MODELS = [DATA / "pytorch-converted" / f"test_{n}" for n in CONVERTED] + [
    DATA / "pytorch-operator" / "test_operator_convtranspose",
    pytest.param(DATA / "pytorch-operator" / "test_operator_conv", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("model_dir", MODELS, ids=lambda p: p.name if isinstance(p, Path) else None)
def test_matches_onnxruntime(model_dir: Path, tmp_path):
    profile = tmp_path / "conformance.toml"  # lowpower with room for test_operator_conv's 4,456,960 B of I/O
    profile.write_text(conformance.CONFORMANCE_PROFILE)
    bundle = compile(model_dir / "model.onnx", str(profile), tmp_path / "out", name=model_dir.name)
    assert bundle.selftest.passed, bundle.selftest.output
    assert "onnxruntime" in bundle.selftest.output


def test_model_the_reference_cannot_run_is_a_clear_error(tmp_path):
    # onnxruntime has no Gemm for opset 6: without a reference there is no self-test, so no bundle.
    with pytest.raises(CompileError, match=r"^model\.onnx: the reference runtime onnxruntime cannot run the model"):
        compile(DATA / "pytorch-converted" / "test_Linear" / "model.onnx", "lowpower", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_model_whose_io_exceeds_lowpowers_sram_is_refused_by_bytes(tmp_path):
    with pytest.raises(DoesNotFitError, match=r"^model\.onnx: inputs, outputs and state need 4,456,960 B of SRAM but "
                                              r"lowpower has 524,288 B"):
        compile(DATA / "pytorch-operator" / "test_operator_conv" / "model.onnx", "lowpower", tmp_path / "out")
    assert not (tmp_path / "out").exists()
