"""TE definition of TFLite's ARG_MAX on an int8 tensor (``reference_ops::ArgMinMax``): ties pick the first index."""

from __future__ import annotations

from tvm import te, tirx


def _first_largest(lhs, rhs):
    """Combine (index, value) pairs: the larger value, the smaller index among equal values."""
    take_rhs = tirx.any(rhs[1] > lhs[1], tirx.all(rhs[1] == lhs[1], rhs[0] < lhs[0]))
    return tirx.Select(take_rhs, rhs[0], lhs[0]), tirx.Select(take_rhs, rhs[1], lhs[1])


def _identity(index_dtype: str, value_dtype: str):
    return tirx.max_value(index_dtype), tirx.min_value(value_dtype)


_ARG_MAX = te.comm_reducer(_first_largest, _identity, name="first_arg_max")


def arg_max_int8(data: te.Tensor, *, axis: int, output_dtype: str) -> te.Tensor:
    """The index along ``axis`` (non-negative) of the first largest value, as ``output_dtype`` (int32 or int64);
    the output is the input's shape without ``axis``."""
    shape = [int(d) for d in data.shape]
    along = te.reduce_axis((0, shape[axis]), "along")
    out_shape = shape[:axis] + shape[axis + 1:]

    def source(out_index):
        return tuple(out_index[:axis]) + (along,) + tuple(out_index[axis:])

    index, _ = te.compute(out_shape, lambda *i: _ARG_MAX((along.var.astype(output_dtype), data[source(i)]), axis=along),
                          name="arg_max_pair")
    return te.compute(out_shape, lambda *i: index(*i), name="arg_max_int8")
