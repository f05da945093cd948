"""int8 RESIZE_NEAREST_NEIGHBOR and CONCATENATION written as runs of copies (tvm_ext/kernels/copy_runs.py) are
bit-exact with TFLite Micro, on a DSP core (each run one call of the bundle's word copy) and on one without
(plain copy loops).

The model (tests/tflite_builder.py): an input of two images of 5 x 7 pixels of 7 channels (not a multiple of four)
resized to 9 x 12 three times, by each of TFLite's rules (neither flag: a non-integer scale with repeated and skipped rows;
align_corners; half_pixel_centers), the three joined along the channels (one run per piece and pixel: on a DSP core
each but the last pixel's 8 bytes, a byte more than the run, `copy_runs.word_rounded`), and the first two joined
along the rows (one block per piece and image; on a DSP core its word copy's whole steps, then the rest,
`copy_runs.word_steps`).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from emulator.tools import missing_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

IN_SHAPE = (2, 5, 7, 7)
OUT_HEIGHT, OUT_WIDTH = 9, 12
RULES = ((False, False), (True, False), (False, True))  # (AlignCorners, HalfPixelCenters)


def _resize_concat_model() -> bytes:
    """The module docstring's network: outputs 2 x 9 x 12 x 18 (channels) and 2 x 18 x 12 x 6 (rows)."""
    quantization = Quantization((0.05,), (-3,))
    tensors = [Tensor("image", IN_SHAPE, "int8", quantization),
               Tensor("size", (2,), "int32", data=np.array((OUT_HEIGHT, OUT_WIDTH), np.int32))]
    operators, resized = [], []
    for align_corners, half_pixel_centers in RULES:
        resized.append(len(tensors))
        tensors.append(Tensor(f"resized_{int(align_corners)}{int(half_pixel_centers)}",
                              (IN_SHAPE[0], OUT_HEIGHT, OUT_WIDTH, IN_SHAPE[3]), "int8", quantization))
        operators.append(Operator("RESIZE_NEAREST_NEIGHBOR", (0, 1), (resized[-1],), Options(
            "ResizeNearestNeighborOptions", {"AlignCorners": align_corners, "HalfPixelCenters": half_pixel_centers})))
    channels, rows = len(tensors), len(tensors) + 1
    tensors.extend([Tensor("channels", (IN_SHAPE[0], OUT_HEIGHT, OUT_WIDTH, 3 * IN_SHAPE[3]), "int8", quantization),
                    Tensor("rows", (IN_SHAPE[0], 2 * OUT_HEIGHT, OUT_WIDTH, IN_SHAPE[3]), "int8", quantization)])
    operators.append(Operator("CONCATENATION", tuple(resized), (channels,), Options("ConcatenationOptions",
                                                                                    {"Axis": 3})))
    operators.append(Operator("CONCATENATION", tuple(resized[:2]), (rows,), Options("ConcatenationOptions",
                                                                                    {"Axis": 1})))
    return build(Model(tensors, operators, (0,), (channels, rows)))


@pytest.fixture(scope="module", params=["cortex-m4f", "cortex-m0plus"])
def copies_bundle(request, tmp_path_factory):
    """The model compiled for a DSP core and a core without, each self-tested under QEMU."""
    if missing_tools():
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    folder = tmp_path_factory.mktemp("copies")
    model = folder / "copies.tflite"
    model.write_bytes(_resize_concat_model())
    return compile(model, request.param, folder / request.param)


def test_resize_and_concatenation_as_copies_are_bit_exact_with_tflite_micro(copies_bundle):
    selftest = copies_bundle.selftest
    assert selftest.passed and selftest.where.startswith("mps2-") and set(selftest.max_errors) == {0}, selftest.output
    bodies = kernel_bodies((copies_bundle.out_dir / f"{copies_bundle.plan.model}_kernels.c").read_text())
    kernels = {name: body for name, body in bodies.items() if "resize" in name or "concatenation" in name}
    # A concatenation's offsets in int32 (one register each; a resize's source offsets come from its tables).
    assert not any("int64_t" in body for name, body in kernels.items() if "concatenation" in name), kernels
    assert len(kernels) == 3, sorted(bodies)  # one resize kernel: the three calls differ only in their tables
    for name, body in kernels.items():
        if copies_bundle.out_dir.name == "cortex-m4f":
            # Every run (a source pixel's 6 channels, a repeated row, a piece) is one word-copy call.
            assert "_copy_ascending(" in body and "for (" not in body.split("copy_ascending")[-1], name
            if "concatenation" in name and "x21" in name:  # the join along the channels: 7-byte runs as 8 bytes
                assert body.count(", 8, 1)") == 3 and body.count(", 7, 1)") == 3, body
            elif "concatenation" in name:  # the join along the rows: each image's 756-byte runs as 47 steps, 4 bytes
                assert body.count(", 752, 1)") == 2 and body.count(", 4, 1)") == 2, body
        else:
            assert "_copy_ascending(" not in body, name
