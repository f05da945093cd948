"""tvm_ext.plan.row_input on hand-made plans: each band's copy of the input becomes a fetch, a band sharing rows
with the one before gets them from a halo kept right after that band was fetched, the input is no buffer of the
plan any more (the RAM counts no input), and plans it cannot take are refused in one line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory_planner.api import MemoryPlan
from memory_planner.from_plan import buffers_from_plan, io_bytes_outside
from memory_planner.plan import (ROWS_FETCH_KERNEL, ROWS_KEEP_KERNEL, ExecutionPlan, KernelCall, Tensor,
                                 TensorRole)
from tvm_ext.plan.row_input import RowInputError, fetch_order_kept, with_row_input

ROWS, COLUMNS, CHANNELS = 10, 4, 3
ROW_BYTES = COLUMNS * CHANNELS


def _plan(bands: list[tuple[int, int]]) -> ExecutionPlan:
    """An input of ROWS rows; per band a copy of its rows and a stage reading it; a join of the stages' outputs."""
    tensors = {"image": Tensor("image", (1, ROWS, COLUMNS, CHANNELS), "int8", TensorRole.INPUT),
               "out": Tensor("out", (1, len(bands), 1, 1), "int8", TensorRole.OUTPUT)}
    calls = []
    for k, (first, stop) in enumerate(bands):
        tensors[f"band{k}"] = Tensor(f"band{k}", (1, stop - first, COLUMNS, CHANNELS), "int8", TensorRole.INTERMEDIATE)
        tensors[f"piece{k}"] = Tensor(f"piece{k}", (1, 1, 1, 1), "int8", TensorRole.INTERMEDIATE)
        calls += [KernelCall("m_slice", (f"slice {k}",), ("image",), (f"band{k}",)),
                  KernelCall("m_stage", (f"stage {k}",), (f"band{k}",), (f"piece{k}",))]
    calls.append(KernelCall("m_join", ("join",), tuple(f"piece{k}" for k in range(len(bands))), ("out",)))
    return ExecutionPlan("m", "m.tflite", "lowpower", tensors, calls, ["image"], ["out"])


def test_bands_are_fetched_and_shared_rows_kept_in_a_halo():
    bands = [(0, 5), (3, 8), (8, 10)]
    plan = with_row_input(_plan(bands), bands)
    assert [c.kernel for c in plan.calls] == [ROWS_FETCH_KERNEL, ROWS_KEEP_KERNEL, "m_stage", ROWS_FETCH_KERNEL,
                                              "m_stage", ROWS_FETCH_KERNEL, "m_stage", "m_join"]
    rows = plan.row_input
    assert (rows.input, rows.rows, rows.row_bytes) == ("image", ROWS, ROW_BYTES)
    assert [(f.band, f.halo, f.first_row, f.pulled_from, f.stop_row) for f in rows.fetches] == [
        ("band0", None, 0, 0, 5), ("band1", "rows_halo1", 3, 5, 8), ("band2", None, 8, 8, 10)]
    assert [(k.band, k.halo, k.offset) for k in rows.keeps] == [("band0", "rows_halo1", 3 * ROW_BYTES)]
    assert plan.tensors["rows_halo1"].nbytes == 2 * ROW_BYTES
    assert plan.calls[3].inputs == ("rows_halo1",) and plan.calls[5].inputs == ()
    assert fetch_order_kept(plan)
    # No call reads the input: the planner places the bands and the halo, and no input is counted outside.
    names = {b.name for b in buffers_from_plan(plan)}
    assert "image" not in names and {"band0", "band1", "band2", "rows_halo1"} <= names
    assert io_bytes_outside(plan, MemoryPlan({}, 0, 0, "test", True)) == (0, 1 * 3)



def test_shared_band_copies_become_fetches_and_their_constants_arrays_leave_the_plan():
    # share_constant_variants gives the bands' copies one kernel reading each band's first row from a constants
    # array: each copy is still a band copy, and its array, read by no call once the fetch replaces it, is no
    # weight of the bundle any more; a constant a kept call reads stays.
    bands = [(0, 5), (3, 8), (8, 10)]
    plan = _plan(bands)
    tensors = dict(plan.tensors, stage_weights=Tensor("stage_weights", (1,), "int8", TensorRole.CONSTANT))
    calls = []
    for call in plan.calls:
        if call.kernel == "m_slice":
            k = call.outputs[0].removeprefix("band")
            tensors[f"l{k}_constants"] = Tensor(f"l{k}_constants", (1,), "int32", TensorRole.CONSTANT)
            call = replace(call, inputs=("image", f"l{k}_constants"))
        elif call.kernel == "m_stage":
            call = replace(call, inputs=(*call.inputs, "stage_weights"))
        calls.append(call)
    rows = with_row_input(replace(plan, tensors=tensors, calls=calls), bands)
    assert [c.kernel for c in rows.calls].count(ROWS_FETCH_KERNEL) == len(bands)
    assert not any(name.endswith("_constants") for name in rows.tensors), sorted(rows.tensors)
    assert "stage_weights" in rows.tensors

def test_a_reordered_plan_that_fetches_out_of_order_is_seen():
    bands = [(0, 5), (5, 10)]  # no shared rows: nothing ties the second fetch to the first
    plan = with_row_input(_plan(bands), bands)
    assert fetch_order_kept(plan)
    assert not fetch_order_kept(replace(plan, calls=[plan.calls[2], plan.calls[3], plan.calls[0], plan.calls[1],
                                                     plan.calls[4]]))


@pytest.mark.parametrize(("plan_bands", "bands", "message"), [
    ([(0, 6), (4, 10)], [(0, 6)], "2 calls read the input, not one copy per band"),
    ([(0, 6), (4, 10)], [(4, 10), (0, 6)], r"band rows \[0, 6\) come after \[4, 10\)"),
    ([(0, 6), (4, 10)], [(0, 5), (4, 10)], "reads the input, but not as a band of rows 1 x 5 x 4 x 3"),
])
def test_plans_it_cannot_take_are_refused_in_one_line(plan_bands, bands, message):
    with pytest.raises(RowInputError, match=message):
        with_row_input(_plan(plan_bands), bands)


def test_a_model_of_two_inputs_is_refused():
    plan = _plan([(0, 10)])
    plan.tensors["other"] = Tensor("other", (1, 2), "int8", TensorRole.INPUT)
    with pytest.raises(RowInputError, match="takes a model of one input; this one has 2"):
        with_row_input(replace(plan, inputs=["image", "other"]), [(0, 10)])
