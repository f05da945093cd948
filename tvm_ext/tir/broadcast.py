"""TFLite's broadcasting of two operands in TE (numpy's rule, BroadcastBinaryFunction): shapes aligned on their last
axis, a missing leading axis or an axis of extent 1 repeated, so a rank-0 (scalar) operand broadcasts everywhere.
Here, not in ``tvm_ext.kernels.elementwise`` (its binary kernels' and PRELU's), so that a backend's own elementwise kernels
(``backends.cortex_m.schedules.dsp_add``) read operands as the generic kernels do without importing the kernels."""

from __future__ import annotations

from typing import Sequence

from tvm import te
from tvm.ir.expr import Expr as PrimExpr


def broadcast_shape(lhs: te.Tensor, rhs: te.Tensor) -> list[int]:
    """The output shape of two broadcast operands (numpy's rule; the frontend has checked they conform)."""
    rank = max(len(lhs.shape), len(rhs.shape))
    padded = [[1] * (rank - len(t.shape)) + [int(d) for d in t.shape] for t in (lhs, rhs)]
    return [max(a, b) for a, b in zip(*padded)]


def broadcast_read(tensor: te.Tensor, index: Sequence[PrimExpr]) -> PrimExpr:
    """``tensor`` at the output ``index``: trailing axes aligned, axes of extent 1 read at 0."""
    own = index[len(index) - len(tensor.shape):]
    return tensor(*(0 if int(d) == 1 else i for d, i in zip(tensor.shape, own)))
