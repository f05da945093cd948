"""An elementwise kernel's loop nest becomes one loop where the backend asks for it
(tvm_ext/schedule/flat_elements.py): every access an element of the block's own shape; a broadcast operand keeps
the nest (its flat index would need a division per element)."""

from __future__ import annotations

from tvm import s_tir, te, tirx

from tvm_ext.schedule.flat_elements import flatten_elements
from tvm_ext.tir.tir_walk import walk

SHAPE = (1, 3, 4, 5)


def _loops_after_flattening(rhs_shape: tuple[int, ...]) -> list[int]:
    """The extents of the loops of an int8 ADD of an operand of SHAPE and one of `rhs_shape` (broadcast), whose
    lhs is read through a table indexed by its byte, after `flatten_elements`."""
    lhs = te.placeholder(SHAPE, "int8", "lhs")
    rhs = te.placeholder(rhs_shape, "int8", "rhs")
    table = te.placeholder((256,), "int32", "table")

    def value(*index):
        other = rhs(*(i if extent > 1 else 0 for i, extent in zip(index, rhs_shape)))
        return (table[lhs(*index).astype("uint8").astype("int32")] + other.astype("int32")).astype("int8")

    out = te.compute(SHAPE, value, name="add")
    sch = s_tir.Schedule(te.create_prim_func([lhs, rhs, table, out]))
    flatten_elements(sch, sch.get_sblock("root"))
    return [int(node.extent) for node in walk(sch.mod["main"].body) if isinstance(node, tirx.For)]


def test_an_elementwise_kernel_is_one_loop() -> None:
    assert _loops_after_flattening(SHAPE) == [60]


def test_a_broadcast_operand_keeps_the_nest() -> None:
    assert _loops_after_flattening((1, 3, 1, 1)) == list(SHAPE)
