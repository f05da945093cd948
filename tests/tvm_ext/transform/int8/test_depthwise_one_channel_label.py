"""A DEPTHWISE_CONV_2D of one input channel keeps its name in the bundle's layer records: TVM imports it as a
plain convolution (groups 1), and the int8 pass once labelled its kernel CONV_2D in the manifest, the entry
function's comments and the kernel's name, so a user looking for the model's layer did not find it. A model of
one kernel call also lost its one record after FuseTIR (its output alias became the call itself)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tflite")

from tflite_models import SAME, VALID, DepthwiseCase, depthwise_model  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402


@pytest.mark.parametrize("multiplier, cases", [(1, [DepthwiseCase(1, SAME)]),  # one kernel call
                                               (8, [DepthwiseCase(1, SAME), DepthwiseCase(2, VALID)])])
def test_a_one_channel_depthwise_convolution_is_recorded_as_depthwise(multiplier, cases, tmp_path):
    path = tmp_path / "dw.tflite"
    path.write_bytes(depthwise_model(1, multiplier, cases))
    bundle = compile(path, "lowpower", tmp_path / "out")
    assert bundle.selftest.passed, bundle.selftest.output
    expected = [f"dw{index}/output (DEPTHWISE_CONV_2D)" for index in range(len(cases))]
    calls = json.loads((bundle.out_dir / "manifest.json").read_text())["calls"]
    assert [layer for call in calls for layer in call["layers"]] == expected, calls
    entry = (bundle.out_dir / f"{bundle.plan.model}_model.c").read_text()
    assert all(label in entry for label in expected) and "(CONV_2D)" not in entry, entry
