"""A float TFLite GELU computes TFLite's function: the exact one with erf, the approximate one with TFLite's tanh
form (tvm_ext/frontend/tflite_ops/gelu.py; TVM 0.27's converter computed the exact GELU for both, which failed the
approximate model's self-test against LiteRT); both through the bundle's own erff or tanhf."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from float_activation_models import write_float_gelu_model
from tvm_ext.compile import compile


@pytest.mark.parametrize(("approximate", "called", "absent"), [(False, "erff", "tanhf"), (True, "tanhf", "erff")])
def test_gelu_computes_tflites_function(tmp_path: Path, approximate: bool, called: str, absent: str) -> None:
    (tmp_path / "model").mkdir()
    bundle = compile(write_float_gelu_model(tmp_path / "model", approximate), "lowpower", tmp_path / "out")
    assert bundle.selftest.passed  # against LiteRT, within its float tolerance
    kernels = (bundle.out_dir / "float_gelu_kernels.c").read_text()
    assert re.search(rf"\bfloat_gelu_{called}\(", kernels) and not re.search(rf"{absent}\(", kernels)
