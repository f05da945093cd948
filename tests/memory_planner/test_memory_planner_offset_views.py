"""Views at a byte offset (an UNPACK, SPLIT or SLICE piece that is a contiguous block of its input): no buffer of
their own, their root live while any of them is read, their offsets the root's plus theirs, checked."""

from __future__ import annotations

import dataclasses

import pytest
from memory_planner_cases import make_plan, tensor

from memory_planner import Buffer, plan_memory
from memory_planner.api import MemoryPlan, View
from memory_planner.check import InvalidMemoryPlanError, check_plan
from memory_planner.from_plan import buffers_from_plan, tensor_offsets, views_from_plan
from memory_planner.plan import InplaceOutput, KernelAccess, KernelCall, TensorRole

R = TensorRole


def unpacked_sequence_plan(views: bool):
    """x -> seq (4 rows of 4 float32) -> a kernel per row reading that row -> a sum of the four results.
    With `views`, the rows are views of seq at 0, 16, 32, 48 bytes; without, four copy calls make them."""
    rows = [tensor(f"row{k}", (4,), **({"view_of": "seq", "view_offset": 16 * k} if views else {}))
            for k in range(4)]
    copies = [] if views else [KernelCall("k_copy", (f"row{k}",), ("seq",), (f"row{k}",)) for k in range(4)]
    tensors = [tensor("x", (16,), R.INPUT), tensor("seq", (4, 4)), *rows,
               *(tensor(f"h{k}", (4,)) for k in range(4)), tensor("y", (4,), R.OUTPUT)]
    steps = [KernelCall("k_seq", ("seq",), ("x",), ("seq",)), *copies,
             *(KernelCall("k_step", (f"h{k}",), (f"row{k}",) + ((f"h{k - 1}",) if k else ()), (f"h{k}",))
               for k in range(4)),
             KernelCall("k_out", ("y",), ("h3",), ("y",))]
    return make_plan(tensors, steps)


def labelled(name: str, nbytes: int, first: int, last: int) -> Buffer:
    """A buffer labelled with its own name (the plan's tensors are their layers)."""
    return Buffer(name, nbytes, first, last, label=name)


# Before: seq lives while the copies read it (steps 0..4); each copied row from its copy to its reader.
BEFORE = [labelled("seq", 64, 0, 4), *(labelled(f"row{k}", 16, 1 + k, 5 + k) for k in range(4)),
          *(labelled(f"h{k}", 16, 5 + k, 6 + k) for k in range(4))]
# Expected with views: no copies, no row buffers; seq lives until its last row is read (step 4).
EXPECTED = [labelled("seq", 64, 0, 4), *(labelled(f"h{k}", 16, 1 + k, 2 + k) for k in range(4))]


def test_copies_give_buffers_of_their_own() -> None:
    assert buffers_from_plan(unpacked_sequence_plan(views=False)) == BEFORE


def test_views_give_no_buffer_and_their_root_lives_until_the_last_is_read() -> None:
    assert buffers_from_plan(unpacked_sequence_plan(views=True)) == EXPECTED


def test_views_shrink_the_arena_and_stay_provably_minimal() -> None:
    before = plan_memory(buffers_from_plan(unpacked_sequence_plan(views=False)))
    plan = unpacked_sequence_plan(views=True)
    buffers = buffers_from_plan(plan)
    after = plan_memory(buffers)
    check_plan(buffers, after, views_from_plan(plan, buffers))
    assert after.arena_bytes < before.arena_bytes
    assert after.optimal and after.arena_bytes == after.lower_bound == 64 + 2 * 16


def test_view_offsets_add_the_root_offset_and_the_chain_of_views() -> None:
    plan = unpacked_sequence_plan(views=True)
    plan.tensors["flat2"] = tensor("flat2", (2, 2), view_of="row2", view_offset=8)
    memory = MemoryPlan({"seq": 32, "h0": 0, "h1": 16, "h2": 0, "h3": 16}, 96, 96, "hand", False)
    offsets = tensor_offsets(plan, memory)
    assert [offsets[f"row{k}"] for k in range(4)] == [32, 48, 64, 80]
    assert offsets["flat2"] == 32 + 32 + 8 and plan.storage_offset("flat2") == 40


def test_views_from_plan_lists_each_view_read_with_its_steps() -> None:
    plan = unpacked_sequence_plan(views=True)
    assert views_from_plan(plan, buffers_from_plan(plan)) == [
        View(f"row{k}", "seq", 16 * k, 16, 1 + k, 1 + k) for k in range(4)]


def test_inplace_is_refused_over_a_root_read_through_a_view_at_an_offset() -> None:
    # The in-place facts' offsets are relative to the source's first byte: h3 may not take seq's bytes at
    # step 4, where the kernel reads row3 from byte 48 of it.
    plan = unpacked_sequence_plan(views=True)
    plan.calls[4] = dataclasses.replace(plan.calls[4], access=KernelAccess((InplaceOutput("h3", "row3"),)))
    assert {b.name: b.inplace_of for b in buffers_from_plan(plan)}["h3"] is None


@pytest.mark.parametrize(
    "view, message",
    [
        (View("row3", "seq", 56, 16, 4, 4), "not inside"),  # past the base's 64 bytes
        (View("row3", "seq", 8, 16, 4, 4), "alignment"),  # not at a multiple of the base's 16
        (View("row3", "seq", 48, 16, 4, 5), "lives only"),  # read after its base's last step
        (View("row3", "nothing", 0, 16, 4, 4), "no buffer"),
    ],
)
def test_the_checker_refuses_a_bad_view(view: View, message: str) -> None:
    plan = unpacked_sequence_plan(views=True)
    buffers = buffers_from_plan(plan)
    memory = plan_memory(buffers)
    with pytest.raises(InvalidMemoryPlanError, match=message):
        check_plan(buffers, memory, [view])


def test_a_view_needs_the_alignment_its_readers_need_not_a_larger_one_of_its_base() -> None:
    # cortex-m55's buffers are 32-byte aligned (a D-cache line); a view 16 bytes on is as good for its readers
    # (memory_planner.api.VIEW_ALIGNMENT_BYTES), and tvm_ext.transform.contiguous_views makes such views: the
    # checker refused them ("not at a multiple of its alignment 32", an internal error on a ShuffleNetV2 export),
    # and still refuses one 8 bytes on.
    plan = unpacked_sequence_plan(views=True)
    buffers = [dataclasses.replace(b, alignment=32) for b in buffers_from_plan(plan)]
    memory = plan_memory(buffers)
    check_plan(buffers, memory, [View("row1", "seq", 16, 16, 2, 2)])
    with pytest.raises(InvalidMemoryPlanError, match="alignment"):
        check_plan(buffers, memory, [View("row1", "seq", 8, 16, 2, 2)])


def test_the_checker_catches_a_view_whose_root_is_reused_while_it_is_read() -> None:
    # A planner that ended seq's life at its writer's step would let h1 reuse bytes row3 still reads.
    plan = unpacked_sequence_plan(views=True)
    buffers = [dataclasses.replace(b, last_step=1) if b.name == "seq" else b for b in buffers_from_plan(plan)]
    memory = plan_memory(buffers)
    with pytest.raises(InvalidMemoryPlanError, match="lives only"):
        check_plan(buffers, memory, views_from_plan(plan, buffers))


def test_inplace_is_refused_for_an_output_that_is_a_view_past_its_root_s_first_byte() -> None:
    # `part` is whole's second half: placing whole over `a` would write part from byte 16 of `a` on, ahead of
    # what the in-place fact (offsets relative to each storage's first byte) allows.
    plan = make_plan(
        [tensor("x", (8,), R.INPUT), tensor("a", (8,)), tensor("whole", (8,)),
         tensor("part", (4,), view_of="whole", view_offset=16), tensor("first", (4,), view_of="whole"),
         tensor("y", (8,), R.OUTPUT)],
        [
            KernelCall("k0", ("a",), ("x",), ("a",)),
            KernelCall("k1", ("part",), ("a",), ("part",), access=KernelAccess((InplaceOutput("part", "a"),))),
            KernelCall("k2", ("first",), ("x",), ("first",)),
            KernelCall("k3", ("y",), ("whole",), ("y",)),
        ],
    )
    assert {b.name: b.inplace_of for b in buffers_from_plan(plan)}["whole"] is None
    plan.calls[1] = dataclasses.replace(plan.calls[1], outputs=("first",), access=KernelAccess(
        (InplaceOutput("first", "a"),)))
    plan.calls[2] = dataclasses.replace(plan.calls[2], outputs=("part",))
    assert {b.name: b.inplace_of for b in buffers_from_plan(plan)}["whole"] == "a"  # at its first byte: taken
