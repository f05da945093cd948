"""TE definitions of TFLite's ARG_MAX and ARG_MIN on an int8 tensor (``reference_ops::ArgMinMax``): ties pick the
first index."""

from __future__ import annotations

from tvm import te, tirx


def _first_largest(lhs, rhs):
    """Combine (index, value) pairs: the larger value, the smaller index among equal values."""
    take_rhs = tirx.any(rhs[1] > lhs[1], tirx.all(rhs[1] == lhs[1], rhs[0] < lhs[0]))
    return tirx.Select(take_rhs, rhs[0], lhs[0]), tirx.Select(take_rhs, rhs[1], lhs[1])


def _first_smallest(lhs, rhs):
    """Combine (index, value) pairs: the smaller value, the smaller index among equal values."""
    take_rhs = tirx.any(rhs[1] < lhs[1], tirx.all(rhs[1] == lhs[1], rhs[0] < lhs[0]))
    return tirx.Select(take_rhs, rhs[0], lhs[0]), tirx.Select(take_rhs, rhs[1], lhs[1])


_ARG_MAX = te.comm_reducer(_first_largest, lambda index, value: (tirx.max_value(index), tirx.min_value(value)),
                           name="first_arg_max")
_ARG_MIN = te.comm_reducer(_first_smallest, lambda index, value: (tirx.max_value(index), tirx.max_value(value)),
                           name="first_arg_min")


def arg_max_int8(data: te.Tensor, *, axis: int, output_dtype: str, largest: bool = True) -> te.Tensor:
    """The index along ``axis`` (non-negative) of the first largest value (the first smallest without
    ``largest``: ARG_MIN), as ``output_dtype`` (int32 or int64); the output is the input's shape without ``axis``."""
    shape = [int(d) for d in data.shape]
    along = te.reduce_axis((0, shape[axis]), "along")
    out_shape = shape[:axis] + shape[axis + 1:]
    reducer = _ARG_MAX if largest else _ARG_MIN

    def source(out_index):
        return tuple(out_index[:axis]) + (along,) + tuple(out_index[axis:])

    index, _ = te.compute(out_shape, lambda *i: reducer((along.var.astype(output_dtype), data[source(i)]), axis=along),
                          name="arg_max_pair" if largest else "arg_min_pair")
    return te.compute(out_shape, lambda *i: index(*i), name="arg_max_int8" if largest else "arg_min_int8")
