"""contiguous_join_offsets: which kernels join contiguous pieces, read from their TIR; JoinsInPlace: which of their
calls become joins in place (``R.concat``), and which keep their copy as their arena in place would grow
(JoinLifetimes: the arena planned both ways)."""

from __future__ import annotations

import pytest
import tvm
from tvm import relax, te, topi

from tvm_ext.kernels.copy_runs import concatenate_runs
from tvm_ext.transform.join_lifetimes import JoinLifetimes
from tvm_ext.transform.joins_in_place import JoinsInPlace, contiguous_join_offsets

A = te.placeholder((1, 2, 8), "int8", name="a")
B = te.placeholder((1, 6, 8), "int8", name="b")
C = te.placeholder((1, 2, 5), "int8", name="c")
BATCHES = te.placeholder((2, 2, 8), "int8", name="batches")


@pytest.mark.parametrize(
    "name, make, offsets",
    [
        ("a join along rows, batch 1", lambda: ([A, B], concatenate_runs([A, B], 1)), [0, 16]),
        ("the same, pieces swapped", lambda: ([B, A], concatenate_runs([B, A], 1)), [0, 48]),
        ("the same as word runs", lambda: ([A, B], concatenate_runs([A, B], 1, word_runs=True)), [0, 16]),
        ("a join along channels", lambda: ([A, C], concatenate_runs([A, C], 2)), None),
        ("a join along rows, batch 2", lambda: ([BATCHES, BATCHES], concatenate_runs([BATCHES, BATCHES], 1)), None),
        ("TOPI's concatenate (selects, no copies)", lambda: ([A, B], topi.concatenate([A, B], 1)), None),
        ("one piece twice", lambda: ([A], te.compute((1, 4, 8), lambda i, j, k: A[i, j % 2, k])), None),
        ("a piece negated", lambda: ([A, B], concatenate_runs([te.compute(A.shape, lambda *i: -A(*i)), B], 1)), None),
    ],
)
def test_contiguous_join_offsets(name: str, make, offsets) -> None:
    inputs, out = make()
    assert contiguous_join_offsets(te.create_prim_func([*inputs, out])) == offsets, name


def _joins_module(rows: tuple[int, int], first_is_input: bool = False):
    """main(x: 1x8x8 int8) -> (join + 1): the join along the rows of x's first rows[0] rows and of its negated
    first rows[1] rows (or x itself first, with `first_is_input`), then a kernel reading the join."""
    x = relax.Var("x", relax.TensorType((1, 8, 8), "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            first = x if first_is_input else bb.emit_te(topi.negative, bb.emit_te(topi.strided_slice, x, [0, 0, 0],
                                                                                   [1, rows[0], 8]))
            second = bb.emit_te(topi.negative, bb.emit_te(topi.strided_slice, x, [0, 0, 0], [1, rows[1], 8]))
            joined = bb.emit_te(lambda a, b: concatenate_runs([a, b], 1), first, second, primfunc_name_hint="join")
            out = bb.emit_output(bb.emit_te(topi.add, joined, relax.const(1, "int8")))
        bb.emit_func_output(out)
    return bb.get()


def _joins(mod) -> list:
    return [b.value for block in mod["main"].body.blocks for b in block.bindings
            if isinstance(b.value, relax.Call) and b.value.op.name == "relax.concat"]


def test_the_pass_joins_aligned_kernel_results_in_place_and_drops_the_copy() -> None:
    mod = JoinsInPlace(alignment=16)(_joins_module((2, 6)))
    assert len(_joins(mod)) == 1 and int(_joins(mod)[0].attrs.axis) == 1
    assert "join" not in {gvar.name_hint for gvar in mod.functions}


@pytest.mark.parametrize("rows, first_is_input", [((3, 5), False), ((8, 6), True)])
def test_the_pass_keeps_a_misaligned_join_or_one_of_a_model_input(rows, first_is_input) -> None:
    mod = JoinsInPlace(alignment=16)(_joins_module(rows, first_is_input))
    assert not _joins(mod) and "join" in {gvar.name_hint for gvar in mod.functions}


def _long_branch_module():
    """main(x: 1x8x8 int8) -> (join + 1): piece a (x's first 2 rows negated, 16 B) is computed first, then a branch
    of two 1,024 B intermediates (x tiled 16 times, negated) computes piece b (its first 6 rows, 48 B), then the
    join of a and b (64 B). In place, the join's 64 B live across the branch (2 x 1,024 + 64 B) where the copy
    holds a's 16 B (2 x 1,024 + 16 B): the arena would grow."""
    x = relax.Var("x", relax.TensorType((1, 8, 8), "int8"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            first = bb.emit_te(topi.negative, bb.emit_te(topi.strided_slice, x, [0, 0, 0], [1, 2, 8]))
            tiled = bb.emit_te(topi.negative, bb.emit_te(topi.tile, x, (1, 16, 1)))
            second = bb.emit_te(topi.strided_slice, tiled, [0, 0, 0], [1, 6, 8])
            joined = bb.emit_te(lambda a, b: concatenate_runs([a, b], 1), first, second, primfunc_name_hint="join")
            out = bb.emit_output(bb.emit_te(topi.add, joined, relax.const(1, "int8")))
        bb.emit_func_output(out)
    return bb.get()


def test_the_pass_keeps_the_copy_of_a_join_whose_arena_in_place_would_grow() -> None:
    before = _long_branch_module()
    main = before["main"]
    bindings = [b for block in main.body.blocks for b in block.bindings]
    join, pieces = bindings[5].var, [bindings[1].var, bindings[4].var]
    lifetimes = JoinLifetimes(main, alignment=16)
    # Planned both ways: 2 x 1,024 + 16 B with the copy, 2 x 1,024 + 64 B in place.
    assert (lifetimes.arena_bytes({}), lifetimes.arena_bytes({p: join for p in pieces})) == (2064, 2112)
    after = JoinsInPlace(alignment=16)(before)
    assert not _joins(after) and "join" in {gvar.name_hint for gvar in after.functions}
    tvm.ir.assert_structural_equal(after, before)


def test_the_pass_joins_in_place_where_the_arena_does_not_grow() -> None:
    before = _joins_module((2, 6))
    main = before["main"]
    bindings = [b for block in main.body.blocks for b in block.bindings]
    join, pieces = bindings[4].var, [bindings[1].var, bindings[3].var]
    lifetimes = JoinLifetimes(main, alignment=16)
    assert lifetimes.arena_bytes({p: join for p in pieces}) <= lifetimes.arena_bytes({})
    assert len(_joins(JoinsInPlace(alignment=16)(before))) == 1
