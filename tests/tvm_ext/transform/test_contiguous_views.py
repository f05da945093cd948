"""contiguous_copy_offset: which kernels copy a contiguous block of their input, read from their TIR."""

from __future__ import annotations

import pytest
from tvm import relax, te, topi

from tvm_ext.transform.contiguous_views import ContiguousCopiesAsViews, contiguous_copy_offset, returned_vars

DATA = te.placeholder((5, 1, 16), "int8", name="data")


@pytest.mark.parametrize(
    "name, make, offset",
    [
        ("an UNPACK piece along the outermost axis", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j]), 48),
        ("a slice of whole rows", lambda: topi.strided_slice(DATA, [2, 0, 0], [4, 1, 16]), 32),
        ("a slice of all of it", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 16]), 0),
        ("a flattening copy", lambda: topi.reshape(DATA, (80,)), 0),
        ("a slice of columns", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 8]), None),
        ("a strided slice", lambda: topi.strided_slice(DATA, [0, 0, 0], [5, 1, 16], [2, 1, 1]), None),
        ("a reversal", lambda: te.compute((16,), lambda j: DATA[0, 0, 15 - j]), None),
        ("arithmetic", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j] + DATA[4, i, j]), None),
        ("a cast", lambda: te.compute((1, 16), lambda i, j: DATA[3, i, j].astype("int16")), None),
        ("a repeated row", lambda: te.compute((2, 16), lambda i, j: DATA[1, 0, j]), None),
    ],
)
def test_contiguous_copy_offset(name: str, make, offset) -> None:
    assert contiguous_copy_offset(te.create_prim_func([DATA, make()])) == offset, name


def _slices_module(begins: list[int]):
    """main(x: 4x8 int8) -> a tuple of: for each of `begins`, the rows [begin, begin + 1) of x, then negated (a
    reader, so the slice is no output), and last the rows [2, 4) of x as they are (an output)."""
    x = relax.Var("x", relax.TensorType((4, 8), "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            read = [bb.emit_te(topi.negative, bb.emit_te(topi.strided_slice, x, [b, 0], [b + 1, 8])) for b in begins]
            returned = bb.emit_te(topi.strided_slice, x, [2, 0], [4, 8])
            out = bb.emit_output(relax.Tuple([*read, returned]))
        bb.emit_func_output(out)
    return bb.get()


def test_the_pass_makes_views_of_aligned_pieces_that_are_no_outputs() -> None:
    mod = ContiguousCopiesAsViews(alignment=16)(_slices_module([2, 1]))
    values = [b.value for block in mod["main"].body.blocks for b in block.bindings]
    views = [v for v in values if isinstance(v, relax.Call) and v.op.name == "relax.memory.view"]
    assert [int(v.args[3].value) for v in views] == [16]  # row 2 at 16 bytes; row 1 (8 bytes) and the output stay
    kernels = {gvar.name_hint for gvar in mod.functions if gvar.name_hint != "main"}
    assert sum(name.startswith("strided_slice") for name in kernels) == 2  # the view's own kernel is dropped


def test_a_cache_lines_alignment_keeps_no_copy() -> None:
    """A profile aligning its buffers to 32 bytes (cortex-m55's D-cache line): rows 2 and 0 of a 4x8 int8, at 16
    and 0 bytes, become views (what a kernel's reads need is 16 at most); row 1, at 8 bytes, stays a copy."""
    mod = ContiguousCopiesAsViews(alignment=32)(_slices_module([2, 1, 0]))
    views = [b.value for block in mod["main"].body.blocks for b in block.bindings
             if isinstance(b.value, relax.Call) and b.value.op.name == "relax.memory.view"]
    assert sorted(int(v.args[3].value) for v in views) == [0, 16]


def test_the_input_of_the_call_main_ends_in_is_no_output_and_becomes_a_view() -> None:
    """main(x) = negative(rows [2, 4) of x): only the negation's result is main's, so the slice (16 bytes on,
    aligned) becomes a view. Before: `returned_vars` also counted the last call's inputs and kept the slice's copy."""
    x = relax.Var("x", relax.TensorType((4, 8), "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit_te(topi.negative, bb.emit_te(topi.strided_slice, x, [2, 0], [4, 8])))
        bb.emit_func_output(out)
    main = bb.get()["main"]
    assert returned_vars(main) == {main.body.body}
    values = [b.value for block in ContiguousCopiesAsViews(alignment=16)(bb.get())["main"].body.blocks
              for b in block.bindings]
    assert [int(v.args[3].value) for v in values if isinstance(v, relax.Call) and v.op.name == "relax.memory.view"] \
        == [16]
