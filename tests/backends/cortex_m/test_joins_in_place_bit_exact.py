"""Joins of contiguous pieces written in place (tvm_ext.transform.joins_in_place) are bit-exact with TFLite Micro:
each piece's kernel writes its slice of the join, in the arena or in the caller's output buffer, and no kernel
copies it; a join whose piece would start off the profile's alignment stays a copy.

The model (tests/tflite_builder.py): an image of 4 x 4 pixels of 8 channels resized (nearest neighbour) to 4 x 8
and to 2 x 8, the two joined along the rows (batch 1: each piece one block of the join, 256 and 128 bytes), the
join resized to 3 x 4 (output 0, so the join is read from the arena); the image resized to 1 x 8 twice (align
corners or not), joined along the rows into output 1 (the pieces written into the caller's buffer); and the image
resized to 1 x 3 twice, joined along the rows (a 24-byte piece, off 16-byte alignment: a copy) into output 2.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from emulator.tools import missing_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402
from tvm_ext.compile import compile  # noqa: E402

CHANNELS = 8
QUANT = Quantization((0.05,), (-3,))


def _joins_model() -> bytes:
    """The module docstring's network."""
    tensors = [Tensor("image", (1, 4, 4, CHANNELS), "int8", QUANT)]
    operators = []

    def resize(source: int, height: int, width: int, align_corners: bool = False) -> int:
        tensors.append(Tensor(f"size{len(tensors)}", (2,), "int32", data=np.array((height, width), np.int32)))
        tensors.append(Tensor(f"resized{len(tensors)}", (1, height, width, CHANNELS), "int8", QUANT))
        operators.append(Operator("RESIZE_NEAREST_NEIGHBOR", (source, len(tensors) - 2), (len(tensors) - 1,), Options(
            "ResizeNearestNeighborOptions", {"AlignCorners": align_corners, "HalfPixelCenters": False})))
        return len(tensors) - 1

    def join(pieces: tuple[int, ...]) -> int:
        height = sum(tensors[p].shape[1] for p in pieces)
        tensors.append(Tensor(f"join{len(tensors)}", (1, height, tensors[pieces[0]].shape[2], CHANNELS), "int8", QUANT))
        operators.append(Operator("CONCATENATION", pieces, (len(tensors) - 1,), Options("ConcatenationOptions",
                                                                                        {"Axis": 1})))
        return len(tensors) - 1

    read = resize(join((resize(0, 4, 8), resize(0, 2, 8))), 3, 4)
    written = join((resize(0, 1, 8), resize(0, 1, 8, align_corners=True)))
    copied = join((resize(0, 1, 3), resize(0, 1, 3, align_corners=True)))
    return build(Model(tensors, operators, (0,), (read, written, copied)))


def test_joins_in_place_are_bit_exact_with_tflite_micro(tmp_path):
    if missing_tools():
        pytest.skip("needs arm-none-eabi-gcc and qemu-system-arm")
    model = tmp_path / "joins.tflite"
    model.write_bytes(_joins_model())
    bundle = compile(model, "cortex-m4f", tmp_path / "out")
    selftest = bundle.selftest
    assert selftest.passed and selftest.where.startswith("mps2-") and set(selftest.max_errors) == {0}, selftest.output
    plan = bundle.plan
    joins = [c for c in plan.calls if any(op.kind == "CONCATENATION" for op in c.operators)]
    assert [plan.tensors[c.outputs[0]].shape for c in joins] == [(1, 2, 3, CHANNELS)]  # only the misaligned copies
    pieces = {name: (plan.storage_of(name), plan.storage_offset(name)) for c in plan.calls for name in c.outputs
              if plan.tensors[name].view_of is not None}
    roles = sorted((plan.tensors[root].role.value, offset) for root, offset in pieces.values())
    # The first join's pieces at 0 and 256 bytes of an arena buffer, the second's at 0 and 64 of output 1.
    assert roles == [("intermediate", 0), ("intermediate", 256), ("output", 0), ("output", 64)], pieces
