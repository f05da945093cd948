"""Row-wise input (`--input-rows`): the model input is not held; its rows fill arena bands as the run asks for them.

The plan comes from a model whose first stages run in horizontal bands (`tvm_ext.transform.patch_prefix` with an
n x 1 grid): band k's branch begins with a call that copies input rows [first_k, stop_k) (its receptive field,
halo included; all columns) out of the model input into an arena tensor, the band. `with_row_input` replaces
each of those copies by a fetch (`RowFetch`, packager/templates/lp_rows.h): the rows band k shares with band
k - 1 come from a small arena tensor, the halo, that a keep call (`RowKeep`) copied out of band k - 1 right
after it was filled, the others are asked of the application one row at a time. So every input row is asked
for once at most, in increasing order, and the arena holds a band and a halo, never the whole input. The band
and the halo are ordinary arena tensors of the plan: the memory planner places them, its checker verifies
them, and the poisoned-arena build poisons them when they are dead, like any other.

Rows no band reads (under a stride that skips them) are never asked for. Pure Python: no TVM.
"""

from __future__ import annotations

from dataclasses import replace

from memory_planner.plan import (DTYPE_BYTES, ROWS_FETCH_KERNEL, ROWS_KEEP_KERNEL, ExecutionPlan, KernelCall,
                                 RowFetch, RowInput, RowKeep, Tensor, TensorRole)

Range = tuple[int, int]  # [start, stop) input rows


class RowInputError(ValueError):
    """The plan cannot take its input row by row (one line: why)."""


def with_row_input(plan: ExecutionPlan, bands: list[Range]) -> ExecutionPlan:
    """`plan` with its one input given row by row: `bands` are the input rows each band's copy reads, in the
    order the plan's calls copy them (see the module). RowInputError when the plan does not read its input
    through exactly those copies (one per band, each the band's rows and every column), or the bands do not
    move down the image (each starting and ending at or below the one before)."""
    if len(plan.inputs) != 1:
        raise RowInputError(f"row-wise input takes a model of one input; this one has {len(plan.inputs)}")
    name = plan.storage_of(plan.inputs[0])
    source = plan.tensors[name]
    if len(source.shape) != 4 or source.shape[0] != 1:
        raise RowInputError(f"row-wise input takes an image input (1 x rows x columns x channels), not "
                            f"{' x '.join(map(str, source.shape))}")
    rows, row_bytes = source.shape[1], source.shape[2] * source.shape[3] * DTYPE_BYTES[source.dtype]
    readers = [i for i, call in enumerate(plan.calls) if name in {plan.storage_of(a) for a in call.args}]
    if len(readers) != len(bands):
        raise RowInputError(f"{len(readers)} calls read the input, not one copy per band ({len(bands)})")
    for (first, stop), (before_first, before_stop) in zip(bands[1:], bands):
        if first < before_first or stop < before_stop:
            raise RowInputError(f"band rows [{first}, {stop}) come after [{before_first}, {before_stop})")
    tensors = dict(plan.tensors)
    fetches: list[RowFetch] = []
    keeps: list[RowKeep] = []
    calls: list[KernelCall] = []
    band_of = dict(zip(readers, range(len(bands))))
    for index, call in enumerate(plan.calls):
        k = band_of.get(index)
        if k is None:
            calls.append(call)
            continue
        first, stop = bands[k]
        band = _band_copy(plan, call, name, (1, stop - first, *source.shape[2:]))
        halo = f"rows_halo{k}" if keeps and keeps[-1].halo == f"rows_halo{k}" else None
        pulled_from = first if k == 0 else max(first, bands[k - 1][1])
        fetches.append(RowFetch(band, halo, first, pulled_from, stop))
        calls.append(KernelCall(ROWS_FETCH_KERNEL, call.layers, () if halo is None else (halo,), (band,),
                                subgraph=call.subgraph, operators=call.operators))
        if k + 1 < len(bands) and bands[k + 1][0] < stop:  # the next band's first rows are among this band's
            kept = f"rows_halo{k + 1}"
            if kept in tensors:
                raise RowInputError(f"the plan already names a tensor {kept!r}")
            tensors[kept] = Tensor(kept, (1, stop - bands[k + 1][0], *source.shape[2:]), source.dtype,
                                   TensorRole.INTERMEDIATE, plan.tensors[band].layer, source.quant,
                                   layout=source.layout)
            keeps.append(RowKeep(band, kept, (bands[k + 1][0] - first) * row_bytes))
            calls.append(KernelCall(ROWS_KEEP_KERNEL, call.layers, (band,), (kept,), subgraph=call.subgraph,
                                    operators=call.operators))
    # A copy's constants array (its band's first row, where the copies share one kernel) is read by no call now.
    read = {arg for call in calls for arg in call.args}
    tensors = {key: tensor for key, tensor in tensors.items() if tensor.role is not TensorRole.CONSTANT or key in read}
    return replace(plan, tensors=tensors, calls=calls,
                   row_input=RowInput(name, rows, row_bytes, tuple(fetches), tuple(keeps)))


def _band_copy(plan: ExecutionPlan, call: KernelCall, source: str, shape: tuple[int, ...]) -> str:
    """The band `call` fills: its one output, when it is a copy of the band's rows of `source` (its one input
    besides constants: a kernel shared by the bands' copies reads each band's first row from a constants array,
    tvm_ext.transform.share_constant_variants; an arena output of `shape` and the input's type); RowInputError
    otherwise."""
    read = [name for name in call.inputs if plan.tensors[name].role is not TensorRole.CONSTANT]
    if len(read) != 1 or len(call.outputs) != 1 or call.scratch or plan.storage_of(read[0]) != source:
        raise RowInputError(f"{'; '.join(call.layers) or call.kernel} reads the input beside a band's copy")
    band = plan.tensors[call.outputs[0]]
    if band.shape != shape or band.dtype != plan.tensors[source].dtype or band.view_of is not None \
            or band.role is not TensorRole.INTERMEDIATE:
        raise RowInputError(f"{'; '.join(call.layers) or call.kernel} reads the input, but not as a band of rows "
                            f"{' x '.join(map(str, shape))}")
    return band.name


def fetch_order_kept(plan: ExecutionPlan) -> bool:
    """Whether `plan`'s calls (after any reordering) still fetch the bands in increasing row order, each keep
    after the fetch of its band and before the fetch that reads its halo."""
    if plan.row_input is None:
        return True
    done: set[str] = set()
    expected = [fetch.band for fetch in plan.row_input.fetches]
    seen: list[str] = []
    for call in plan.calls:
        fetch = plan.row_input.fetch_of(call)
        if fetch is not None:
            if fetch.halo is not None and fetch.halo not in done:
                return False
            seen.append(fetch.band)
        keep = plan.row_input.keep_of(call)
        if keep is not None:
            if keep.band not in seen:
                return False
        done.update(call.outputs)
    return seen == expected
