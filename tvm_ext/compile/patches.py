"""`--patches off|auto|NxM`: which patch plan (tvm_ext.transform.patch_prefix) a compile runs, and its facts.

`off` compiles layer by layer, as without the option. `NxM` runs the first stages in an N x M grid of patches,
cut where the cost model (tvm_ext.patch_geometry) gives this grid its smallest arena (then the fewest extra
MACs). `stream` (`streamN`) runs them streamed: in bands of rows each computing only its new rows, the rows
a stage reads again kept from the band before (no extra MACs; a global average pool or a FULLY_CONNECTED at the
cut summed band by band), in the bands and up to the cut of smallest estimated arena (N bands). `auto` compiles layer by layer
and, only when that does not fit the profile's SRAM, tries the plans (patches and streamed bands) whose
estimated arena fits, fewest extra MACs first (so streamed bands first; at most `AUTO_ATTEMPTS` of each kind
compiled and planned), and takes the first
that fits every limit of the profile: its planned RAM the SRAM, then, after its build, its measured flash (weights,
code, data: each patch's kernels have shapes of their own, so a finer grid brings more code). A plan refused on
either does not end the search (`AutoSearch`); when none fits, the refusal gives the best plan's excess on each
limit. When no estimate fits, the plan of smallest estimate is compiled for the refusal's figure. Under the layouts
the passes choose (no --layout), a float model with a subgraph in NCHW has its plans searched again with every
layer in NHWC once none of the chosen layouts' fits (or they give no chain from an input), layer by layer in
NHWC first (no extra MACs): a bundle in NHWC beats a refusal. A plan whose
weights alone exceed the flash is refused once its code is generated, before its planning (`PlanWeightsDoNotFit`):
no memory plan changes its weights, so planning it could only end in the same refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from target.profile import Profile
from target.resources import FlashUse, RamUse, ResourceError, check_fits, check_flash_fits
from tvm_ext.compile import CompileError, DoesNotFitError
from memory_planner.plan import ExecutionPlan
from tvm_ext.patch_geometry import (MAX_BANDS, PatchCut, PatchPlan, layer_by_layer_peak, patch_regions, plan_cost,
                                    receptive_rows, search, split, stream_rows, stream_search)

OFF, AUTO, STREAM = "off", "auto", "stream"


@dataclass(frozen=True)
class StreamRequest:
    """`--patches stream` (`bands` None: the bands of smallest estimated arena) or `streamN` (N bands)."""

    bands: int | None = None

    def __str__(self) -> str:
        return STREAM if self.bands is None else f"{STREAM}{self.bands}"


PatchRequest = str | tuple[int, int] | StreamRequest  # OFF, AUTO, a grid (rows, columns) or streamed bands
AUTO_ATTEMPTS = 3  # plans compiled by `auto` at most: each costs the passes, the code generation and the planning
MAX_GRID = 8  # rows and columns of a grid `auto` considers


def parse_patches(text: str) -> PatchRequest:
    """`off`, `auto`, `NxM` (N, M whole numbers from 1, not both 1), `stream` or `streamN` (N from 2); ValueError
    naming the value otherwise."""
    if text in (OFF, AUTO):
        return text
    streamed = re.fullmatch(r"stream([1-9][0-9]{0,3})?", text)
    if streamed is not None and streamed.group(1) != "1":
        return StreamRequest(None if streamed.group(1) is None else int(streamed.group(1)))
    found = re.fullmatch(r"([1-9][0-9]{0,3})x([1-9][0-9]{0,3})", text)
    if found is None or (found.group(1), found.group(2)) == ("1", "1"):
        raise ValueError(f"--patches takes off, auto, a grid NxM of patch rows and columns such as 2x4 (not 1x1), "
                         f"stream or streamN (N bands from 2), not {text!r}")
    return int(found.group(1)), int(found.group(2))


@dataclass(frozen=True)
class PatchFacts:
    """The patch plan a bundle runs: the cut (after window stage `cut` of the chain, the model layer
    `cut_layer`), the grid, the arena (bytes) layer by layer when it was compiled (None: not) and with the
    patches, and the extra multiply-accumulates over those of the layer-by-layer model."""

    cut: int
    cut_layer: str
    grid: tuple[int, int]
    arena_before: int | None
    arena_after: int
    extra_macs: int
    model_macs: int  # layer by layer
    driver: int | None = None  # streamed: grid[0] bands of this window stage's (1-based) output rows

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_macs / self.model_macs if self.model_macs else 0.0

    def manifest_entry(self) -> dict:
        return {"cut_after_window_stage": self.cut, "cut_layer": self.cut_layer, "grid": list(self.grid),
                "arena_bytes_layer_by_layer": self.arena_before, "arena_bytes": self.arena_after,
                "extra_macs": self.extra_macs, "extra_macs_percent": round(self.extra_percent, 2),
                **({} if self.driver is None else {"streamed_bands": self.grid[0],
                                                    "bands_of_window_stage": self.driver})}

    @property
    def what(self) -> str:
        """The plan in words: "N streamed bands of stage S" or "NxM patches"."""
        if self.driver is None:
            return f"{self.grid[0]}x{self.grid[1]} patches"
        return f"{self.grid[0]} streamed bands of window stage {self.driver}"

    def line(self) -> str:
        """One line: the plan, the arena before and after, the extra MACs in percent."""
        before = "" if self.arena_before is None else f"{self.arena_before:,} B layer by layer -> "
        return (f"{self.what} up to {self.cut_layer} (window stage {self.cut}): arena "
                f"{before}{self.arena_after:,} B, {self.extra_macs:,} extra MACs (+{self.extra_percent:.1f} %)")


def _window_chain(func):
    """The window chain of `func` as RunPrefixInPatches finds it: of its 1-D convolution network's sequences as
    rows (tvm_ext.transform.sequence_rows), if it has one."""
    from tvm_ext.transform.patch_prefix import window_chain  # TVM: imported once a compile runs the passes
    from tvm_ext.transform.sequence_rows import sequences_as_rows

    return window_chain(sequences_as_rows(func))


def plans_of(func) -> list[PatchPlan]:
    """Every plan of `func`'s window chain (cut in its first stages that form a chain, grid up to MAX_GRID x
    MAX_GRID; cut where its graph ends in one value and streamed bands) with the cost model's arena estimate (the
    rest of the graph layer by layer after the cut), by estimate then extra MACs (then fewer bands); [] without a
    chain."""
    return _chain_plans(_window_chain(func))


def _chain_plans(chain) -> list[PatchPlan]:
    """`plans_of` of the window chain `chain` (None: no chain)."""
    if chain is None:
        return []
    stages, linear = chain.geometries, chain.geometries[:chain.linear]
    rest, macs = _rest_peak(stages, chain.inputs), sum(s.macs for s in stages)
    grids = search(linear, rest, macs, MAX_GRID) if len(linear) >= 2 else []
    return sorted(grids + stream_search(stages, rest, macs, chain.cuts, inputs=chain.inputs),
                  key=lambda p: (p.arena_bytes, p.extra_macs, p.grid[0] * p.grid[1]))


def _rest_peak(stages, inputs=None):
    """The cost model's layer-by-layer peak after a cut (rest_peak_bytes of tvm_ext.patch_geometry.search;
    `inputs`: the stages each stage reads, None for a chain)."""
    return lambda cut: layer_by_layer_peak(stages, cut, inputs) if cut < len(stages) else 0


def streamed_plan(func, bands: int | None) -> PatchPlan | None:
    """The streamed plan (tvm_ext.patch_geometry.stream_search) of smallest estimated arena (then fewer bands) of
    `func`'s window chain, of `bands` bands when given; None without a chain or a plan of that many bands."""
    chain = _window_chain(func)
    if chain is None:
        return None
    stages = chain.geometries
    plans = stream_search(stages, _rest_peak(stages, chain.inputs), sum(s.macs for s in stages), chain.cuts,
                          MAX_BANDS if bands is None else bands, chain.inputs)
    return next((p for p in plans if bands is None or p.grid[0] == bands), None)


def plan_for_grid(func, grid: tuple[int, int]) -> PatchPlan | None:
    """The cut for `grid` of smallest estimated arena (then fewest extra MACs), None when no cut's output has
    that many rows and columns or `func` has no window chain."""
    chain = _window_chain(func)
    if chain is None or chain.linear < 2:
        return None
    stages, rest = chain.geometries[:chain.linear], _rest_peak(chain.geometries, chain.inputs)
    macs = sum(s.macs for s in chain.geometries)
    plans = [plan_cost(stages, cut, grid, rest(cut), macs)
             for cut in range(1, len(stages) + 1)
             if grid[0] <= stages[cut - 1].out_hw[0] and grid[1] <= stages[cut - 1].out_hw[1]]
    return min(plans, key=lambda p: (p.arena_bytes, p.extra_macs), default=None)


def band_rows(func, cut: PatchCut) -> list[tuple[int, int]]:
    """The input rows [start, stop) each band of an n x 1 `cut` of `func`'s window chain reads (its receptive
    field, halo included; streamed: that of the first stage's new rows, for each band that has some), top band
    first: what a row-wise input fetches (tvm_ext.plan.row_input)."""
    return _chain_band_rows(_window_chain(func), cut)


def _chain_band_rows(chain, cut: PatchCut) -> list[tuple[int, int]]:
    """`band_rows` of the window chain `chain`."""
    stages = chain.geometries[:cut.cut]
    if cut.driver is not None:
        first = stages[0]
        return [receptive_rows(rows[0], first.kernel[0], first.stride[0], first.pad[0], first.in_hw[0])
                for rows in stream_rows(stages, cut.grid[0], cut.driver, chain.inputs[:cut.cut])
                if rows[0][0] < rows[0][1]]
    width = stages[-1].out_hw[1]
    return [patch_regions(stages, (rows, (0, width)))[0][0] for rows in split(stages[-1].out_hw[0], cut.grid[0])]


def takes_rows(func, plan: PatchPlan) -> bool:
    """Whether `plan` runs in bands (an n x 1 grid) none of which reads every input row, the input read by its
    first stage alone: a plan a row-wise input can take (a band reading all rows would hold the whole input; a
    skip from the input would read its rows again)."""
    return _chain_takes_rows(func, _window_chain(func), plan)


def _chain_takes_rows(func, chain, plan: PatchPlan) -> bool:
    """`takes_rows` of `func`'s window chain `chain` (None: none)."""
    if plan.grid[1] != 1 or not _from_input(func, chain) or any(-1 in inputs for inputs in chain.inputs[1:plan.cut]):
        return False
    height = chain.geometries[0].in_hw[0]
    return all(rows != (0, height) for rows in _chain_band_rows(chain, cut_of(plan)))


def _from_input(func, chain) -> bool:
    """Whether `chain` (None: no chain) starts at an input of `func` itself, not at a reshape of one (a row-wise
    input gives the rows of the input's own shape)."""
    return chain is not None and any(chain.source.same_as(param) for param in func.params)


def with_rows(plan: ExecutionPlan, func, cut: PatchCut, file_name: str) -> ExecutionPlan:
    """`plan` (compiled with the n x 1 `cut`) with its input given row by row (tvm_ext.plan.row_input.with_row_input);
    CompileError (one line) when it cannot take it."""
    from tvm_ext.plan.row_input import RowInputError, with_row_input

    try:
        return with_row_input(plan, band_rows(func, cut))
    except RowInputError as err:
        raise CompileError(f"{file_name}: --input-rows: {err}") from err


def rows_request(func, request: PatchRequest, file_name: str, io_counts: tuple[int, int],
                 io_in_arena: bool) -> PatchRequest:
    """The patch request a row-wise input compiles with: `request` when it is auto or a grid of one column
    (off becomes auto: the input is banded either way); CompileError (one line) for a grid of several columns, a
    model of other than one input and one output (`io_counts`), inputs in the arena, or a model without a chain
    of windowed NHWC stages from its input to band."""
    if io_counts != (1, 1):
        raise CompileError(f"{file_name}: --input-rows takes a model of one image input and one output; this one "
                           f"has {io_counts[0]} inputs and {io_counts[1]} outputs")
    if io_in_arena:
        raise CompileError(f"{file_name}: --input-rows gives the input row by row, so it is not in the arena; leave "
                           "out --io-in-arena")
    if not _from_input(func, _window_chain(func)):
        raise CompileError(f"{file_name}: --input-rows needs a chain of windowed NHWC stages from the model input "
                           "(convolutions, pools) to run in bands of rows; this model has none")
    if isinstance(request, tuple) and request[1] != 1:
        raise CompileError(f"{file_name}: --input-rows runs the first stages in bands of full rows: --patches "
                           f"{request[0]}x1 or auto, not {request[0]}x{request[1]}")
    return AUTO if request == OFF else request


def auto_candidates(func, arena_budget: int, rows: bool = False) -> list[PatchPlan]:
    """The plans `auto` compiles, in order: estimated arena within `arena_budget` bytes, fewest extra MACs first
    (then smaller estimate): streamed bands (no extra MACs), then patches, at most AUTO_ATTEMPTS of each (the
    streamed plans' code is much alike: when their flash does not fit, the patches' may). `rows`: only plans a
    row-wise input takes (`takes_rows`, asked of the plans in that order only until AUTO_ATTEMPTS of each kind
    are found: it follows each band's rows through the chain)."""
    chain = _window_chain(func)
    within = sorted((p for p in _chain_plans(chain) if p.arena_bytes <= arena_budget),
                    key=lambda p: (p.extra_macs, p.arena_bytes))
    streamed: list[PatchPlan] = []
    patches: list[PatchPlan] = []
    for plan in within:
        kind = streamed if plan.streamed else patches
        if len(kind) < AUTO_ATTEMPTS and (not rows or _chain_takes_rows(func, chain, plan)):
            kind.append(plan)
        if len(streamed) == len(patches) == AUTO_ATTEMPTS:
            break
    return streamed + patches


def smallest_plan(func, rows: bool = False) -> list[PatchPlan]:
    """[the plan of `plans_of` of smallest estimate] (`rows`: of those a row-wise input takes), [] when none."""
    chain = _window_chain(func)
    return next(([plan] for plan in _chain_plans(chain) if not rows or _chain_takes_rows(func, chain, plan)), [])


def _stage_number(plan: PatchPlan) -> int | None:
    """The 1-based window stage whose output rows a streamed plan's bands split (None: not streamed)."""
    return None if plan.driver is None else plan.driver + 1


def cut_of(plan: PatchPlan) -> PatchCut:
    return PatchCut(plan.cut, plan.grid, plan.driver)


def cut_layer(func, cut: int) -> str:
    """The label of the model layer whose output window stage `cut` of `func`'s chain ends with."""
    from tvm_ext.layers import Layers, bindings_of
    from tvm_ext.transform.patch_prefix import window_chain
    from tvm_ext.transform.sequence_rows import sequences_as_rows

    func = sequences_as_rows(func)  # the function the chain's bindings are of, rewritten once
    chain = window_chain(func)
    output = chain.bindings[chain.stages[cut - 1].output].var
    position = next(i for i, b in enumerate(bindings_of(func)) if b.var.same_as(output))
    records = Layers.of(func).of_binding(position)
    return records[0].label if records else output.name


def patch_plan_for_grid(func, request: PatchRequest, file_name: str) -> PatchPlan | None:
    """The plan of the grid or streamed bands `request` names for the model's main `func` as the patch pass sees
    it (tvm_ext.lower.main_for_patches; None for off and auto); CompileError when it has no window chain whose
    output has that many rows and columns (bands)."""
    if isinstance(request, StreamRequest):
        plan = streamed_plan(func, request.bands)
        if plan is None:
            raise CompileError(f"{file_name}: --patches {request}: the model has no chain of windowed NHWC stages "
                               "from an input" + ("" if request.bands is None else " that delivers that many rows"))
        return plan
    if not isinstance(request, tuple):
        return None
    plan = plan_for_grid(func, request)
    if plan is None:
        raise CompileError(f"{file_name}: --patches {request[0]}x{request[1]}: the model has no chain of windowed "
                           "NHWC stages from an input whose output has that many rows and columns")
    return plan


def grid_patch_facts(func, plan: PatchPlan, planned) -> PatchFacts:
    """The facts of the grid's plan `plan` of `func` (as patch_plan_for_grid's) as compiled and planned
    (`planned`); no layer-by-layer arena."""
    macs = planned.plan.total_macs()
    return PatchFacts(plan.cut, cut_layer(func, plan.cut), plan.grid, None, planned.memory.arena_bytes,
                      plan.extra_macs, macs - plan.extra_macs, _stage_number(plan))


class PlanWeightsDoNotFit(Exception):
    """A patch plan's weights alone (`flash`, weights only) exceed the profile's flash, found before its planning:
    the memory plan places the arena, never the weights, so the plan would be refused whatever its RAM.
    `overruns`: the flash's (target.Overrun)."""

    def __init__(self, flash: FlashUse, overruns: tuple) -> None:
        super().__init__(f"weights need {flash.total_bytes:,} B of flash")
        self.flash = flash
        self.overruns = overruns


def refuse_unless_weights_fit(profile: Profile, model: str, flash: FlashUse) -> None:
    """PlanWeightsDoNotFit when a plan's weights (`flash`: its weights only, the code not counted) alone exceed
    `profile`'s flash; nothing otherwise. For `AutoSearch`'s `compile_with`, between the code generation (which
    gives the plan's weights) and the planning."""
    try:
        check_flash_fits(profile, model, flash.weights_bytes)
    except ResourceError as err:
        raise PlanWeightsDoNotFit(flash, err.overruns) from err


@dataclass(frozen=True)
class _Refused:
    """A plan `auto` compiled and the fit check refused: its facts, RAM and flash as counted, and each limit
    it exceeds (target.Overrun)."""

    facts: PatchFacts
    ram: RamUse | None  # None: refused on its weights before its planning (its arena in `facts` the estimate)
    flash: FlashUse | None  # None: refused on its RAM before the build, its flash not yet counted
    overruns: tuple
    nhwc: bool = False  # a plan of the search's NHWC layout (AutoSearch's `nhwc`)

    @property
    def excess_bytes(self) -> int:
        """The bytes over every limit together: how far the plan is from fitting."""
        return sum(overrun.excess_bytes for overrun in self.overruns)


class AutoSearch:
    """`auto` once the layer-by-layer bundle (`planned`, its RAM `ram`) does not fit `profile`'s SRAM: the plans
    of `auto_candidates` of `func` (main as the patch pass sees it, in the layouts chosen for the profile:
    tvm_ext.lower.main_for_patches; fewest extra MACs first), each compiled by `compile_with(cut)` -> (lowered,
    generated, planned, ram). `next_fitting` gives the next whose planned RAM fits; the compile counts its flash
    (the code measured after the build) and hands a plan the fit check still refuses, on any limit, back by
    `refused`, and the search goes on with the next plan. `compile_with` may raise PlanWeightsDoNotFit
    (`refuse_unless_weights_fit`) for a plan whose weights alone exceed the flash, before planning it: the search
    goes on too. `nhwc` (None: none) gives, when first called, main as the patch pass sees it with every layer in
    NHWC and its `compile_with` (which compiles layer by layer for the cut None): once no plan of `func` is left,
    the search goes on with layer by layer in NHWC (no extra MACs; not with a row-wise input), given with no
    PatchFacts (None) and, refused, not recorded, then with that function's plans (the layouts the passes chose
    may put the first layers in NCHW, outside any window chain). When none is left,
    DoesNotFitError: one line with layer by layer's excess and the best plan's (fewest bytes over all limits
    together; a plan refused on its weights counts only its flash's) on each limit it exceeds."""

    def __init__(self, func, profile: Profile, planned, ram: RamUse,
                 compile_with: Callable[[PatchCut], tuple[Any, Any, Any, RamUse]], rows: bool = False,
                 nhwc: Callable[[], tuple[Any, Callable[[PatchCut | None], tuple[Any, Any, Any, RamUse]]]] | None = None
                 ) -> None:
        self._profile = profile
        self._model = planned.plan.model
        self._macs = planned.plan.total_macs()
        self._ram = ram
        self._rows = rows
        self._nhwc = nhwc
        self._in_nhwc = False  # the plans are those of `nhwc`'s function
        self._refused: list[_Refused] = []
        self._search(func, compile_with)

    def _search(self, func, compile_with: Callable[[PatchCut], tuple[Any, Any, Any, RamUse]]) -> None:
        """Search the plans of `func` (main as the patch pass sees it: tvm_ext.lower.main_for_patches), each
        compiled by `compile_with`."""
        self._func = func
        self._compile_with = compile_with
        rows, ram = self._rows, self._ram
        # With a row-wise input (`rows`: only banded plans) the input is not held, its bands are in the arena.
        budget = self._profile.sram_bytes - (ram.total_bytes - ram.arena_bytes) + (ram.input_bytes if rows else 0)
        # None within the budget: the plan of smallest estimate is compiled all the same, for the refusal's figure.
        self._plans = iter(auto_candidates(func, budget, rows) or smallest_plan(func, rows))

    def next_fitting(self) -> tuple:
        """The next plan whose planned RAM fits the SRAM, compiled: (lowered, generated, planned, ram, PatchFacts);
        DoesNotFitError (see the class) when no plan is left."""
        while True:
            for plan in self._plans:
                try:
                    lowered, generated, patched, patched_ram = self._compile_with(cut_of(plan))
                except PlanWeightsDoNotFit as over:
                    estimated = PatchFacts(plan.cut, cut_layer(self._func, plan.cut), plan.grid,
                                           self._ram.arena_bytes, plan.arena_bytes, plan.extra_macs, self._macs,
                                           _stage_number(plan))
                    self._refused.append(_Refused(estimated, None, over.flash, over.overruns, self._in_nhwc))
                    continue
                facts = PatchFacts(plan.cut, cut_layer(self._func, plan.cut), plan.grid, self._ram.arena_bytes,
                                   patched_ram.arena_bytes, patched.plan.total_macs() - self._macs, self._macs,
                                   _stage_number(plan))
                if patched_ram.total_bytes <= self._profile.sram_bytes:
                    return lowered, generated, patched, patched_ram, facts
                self._refused.append(_Refused(facts, patched_ram, None,
                                              _refusal(self._profile, self._model, patched_ram)[1], self._in_nhwc))
            if self._nhwc is None or self._in_nhwc:
                raise self._refusal()
            self._in_nhwc = True
            self._search(*self._nhwc())
            found = None if self._rows else self._layer_by_layer()
            if found is not None:
                return found

    def _layer_by_layer(self) -> tuple | None:
        """Layer by layer with every layer in NHWC (no extra MACs: before the plans in NHWC), compiled, when its
        planned RAM fits the SRAM: (lowered, generated, planned, ram, None); None otherwise."""
        try:
            lowered, generated, planned, ram = self._compile_with(None)
        except PlanWeightsDoNotFit:
            return None
        return (lowered, generated, planned, ram, None) if ram.total_bytes <= self._profile.sram_bytes else None

    def refused(self, facts: PatchFacts | None, ram: RamUse, flash: FlashUse, err: DoesNotFitError) -> tuple:
        """Record that the fit check refused the plan of `facts` (None: layer by layer in NHWC, not recorded; its
        RAM `ram` and flash `flash` as counted, `err` the refusal) and give the next fitting plan as
        `next_fitting` does."""
        if facts is not None:
            self._refused.append(_Refused(facts, ram, flash, err.overruns, self._in_nhwc))
        return self.next_fitting()

    def line(self, facts: PatchFacts | None) -> str:
        """The "patches" stage's line for the plan of `facts`: PatchFacts.line, and when an earlier plan was
        refused after its planning fitted, by how many bytes over which limit."""
        nhwc = "every layer in NHWC (no plan fits in the layouts chosen per subgraph)"
        line = f"layer by layer with {nhwc}" if facts is None else facts.line() + (f"; {nhwc}" if self._in_nhwc else "")
        after = [r for r in self._refused if r.flash is not None]
        if not after:
            return line
        last = after[-1]
        over = ", ".join(f"{o.memory} {o.excess_bytes:,} B over" for o in last.overruns)
        plan = last.facts.what if last.facts.driver is not None else f"{last.facts.grid[0]}x{last.facts.grid[1]}"
        when = "after its build" if last.ram is not None else "on its weights, before its planning"
        return f"{line}; {plan} up to window stage {last.facts.cut} was refused {when} ({over})"

    def _refusal(self) -> DoesNotFitError:
        layer_by_layer, overruns = _refusal(self._profile, self._model, self._ram)
        if not self._refused:
            return DoesNotFitError(f"{layer_by_layer}; no chain of windowed NHWC stages from a model input to run "
                                   "patch by patch" + (", nor with every layer in NHWC" if self._in_nhwc else ""),
                                   overruns)
        best = min(self._refused, key=lambda refused: refused.excess_bytes)
        if best.ram is None:  # refused on its weights: its arena is the cost model's estimate
            facts = best.facts
            plan = (f"{facts.what} up to {facts.cut_layer} (window stage {facts.cut}): arena estimated "
                    f"{facts.arena_after:,} B, not planned")
            limits = []
        else:
            plan = best.facts.line()
            limits = [f"RAM needs {best.ram.total_bytes:,} B" + _over(best.ram.total_bytes - self._profile.sram_bytes)]
        if best.flash is not None:
            limits.append(f"{best.flash.what()} need {best.flash.total_bytes:,} B of flash"
                          + _over(best.flash.total_bytes - self._profile.flash_bytes))
        layout = " with every layer in NHWC" if best.nhwc else ""
        return DoesNotFitError(f"{layer_by_layer}; patch by patch{layout} at best ({plan}) {', '.join(limits)}",
                               best.overruns)


def _over(excess: int) -> str:
    return f" ({excess:,} B over)" if excess > 0 else " (fits)"


def _refusal(profile: Profile, model: str, ram: RamUse) -> tuple[str, tuple]:
    """The fit check's line and overruns for `ram` (which does not fit `profile`'s SRAM)."""
    try:
        check_fits(profile, model, ram, 0)
    except ResourceError as err:
        return str(err), err.overruns
    raise AssertionError(f"{model}: {ram.total_bytes:,} B of RAM fits {profile.name}: no refusal to give")
