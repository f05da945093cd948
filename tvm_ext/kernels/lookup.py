"""TE definition of an int8 kernel that is one table lookup per element (LOGISTIC, TANH, HARD_SWISH:
``int8_tables``)."""

from __future__ import annotations

from tvm import te

from .int8_tables import TABLE_SIZE


def lookup_int8(data: te.Tensor, table: te.Tensor) -> te.Tensor:
    """``table[data + 128]`` per element: ``table`` holds 256 int8 values, the output of each int8 input."""
    if [int(d) for d in table.shape] != [TABLE_SIZE]:
        raise ValueError(f"a lookup table has {TABLE_SIZE} entries, not shape {list(table.shape)}")
    return te.compute(data.shape, lambda *index: table[data(*index).astype("int32") + 128], name="lookup_int8")
