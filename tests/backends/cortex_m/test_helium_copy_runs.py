"""On a Helium core (cortex-m55), as on the DSP cores, int8 PAD and TRANSPOSE are written as runs of copies
(`KernelSchedules.pad_runs`, tvm_ext/kernels/copy_runs.py: the input's rows copied whole and the padding filled; the
trailing axes a transpose keeps in place copied whole), each run one call of the bundle's ascending copy, bit for bit
with TFLite Micro under QEMU mps3-an547. Before, the generic loop nest copied a byte at a time: a causal TCN's PADs
on 75x24 took 16,000-18,000 instructions each (8.3 per byte written), the runs 1,600-2,800."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, needs_cross_tools  # noqa: E402
from tflite_builder import ModelBuilder, Quantization, Tensor, build  # noqa: E402


def _pad_transpose_model() -> bytes:
    """An int8 input [1, 9, 5, 24] (zero point -7): its causal PAD of 4 rows before (a TCN's: every output row a run
    of 120 bytes) and its TRANSPOSE of the middle axes (perm 0, 2, 1, 3: each pixel's 24 channels a run), each a
    model output."""
    quantization = Quantization((0.05,), (-7,))
    b = ModelBuilder()
    image = b.add(Tensor("image", (1, 9, 5, 24), "int8", quantization))
    b.inputs.append(image)
    paddings = b.add(Tensor("paddings", (4, 2), "int32", data=np.array([[0, 0], [4, 0], [0, 0], [0, 0]], np.int32)))
    b.outputs.append(b.op("PAD", (image, paddings), Tensor("padded", (1, 13, 5, 24), "int8", quantization)))
    perm = b.add(Tensor("perm", (4,), "int32", data=np.array([0, 2, 1, 3], np.int32)))
    b.outputs.append(b.op("TRANSPOSE", (image, perm), Tensor("transposed", (1, 5, 9, 24), "int8", quantization)))
    return build(b.model())


@needs_cross_tools
def test_helium_pad_and_transpose_copy_runs_bit_exactly(tmp_path):
    bundle, kernels = bit_exact_bundle(tmp_path, "runs", _pad_transpose_model(), "cortex-m55", "mps3-an547")
    bodies = kernel_bodies(kernels)
    assert len(bodies) == 2, list(bodies)
    for name, body in bodies.items():  # each kernel's copies are calls of the ascending copy, no byte loop
        assert "_copy_ascending(" in body, (name, body)
