"""TE definition of one output of TFLite's UNPACK (``reference_ops::Unpack``): a copy of the stored values."""

from __future__ import annotations

from tvm import te


def unpack_piece(data: te.Tensor, *, axis: int, index: int) -> te.Tensor:
    """The slice of ``data`` at ``index`` along ``axis`` (non-negative), without that axis; any dtype, the
    values copied as they are stored (UNPACK keeps its input's quantization)."""
    shape = [int(size) for size in data.shape]
    return te.compute(shape[:axis] + shape[axis + 1:], lambda *at: data[at[:axis] + (index,) + at[axis:]],
                      name="unpack_piece")
