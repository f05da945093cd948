"""`--patches off|auto|NxM`: which patch plan (tvm_ext.transform.patch_prefix) a compile runs, and its facts.

`off` compiles layer by layer, as without the option. `NxM` runs the first stages in an N x M grid of patches,
cut where the cost model (tvm_ext.patch_geometry) gives this grid its smallest arena (then the fewest extra
MACs). `auto` compiles layer by layer and, only when that does not fit the profile's SRAM, tries the plans whose
estimated arena fits, fewest extra MACs first (at most `AUTO_ATTEMPTS` compiled and planned), and takes the first
whose planned RAM fits; when no estimate fits, the plan of smallest estimate is compiled for the refusal's figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from target.profile import Profile
from target.resources import RamUse, ResourceError, check_fits
from tvm_ext.compile import CompileError, DoesNotFitError
from tvm_ext.patch_geometry import PatchCut, PatchPlan, layer_by_layer_peak, plan_cost, search

OFF, AUTO = "off", "auto"
PatchRequest = str | tuple[int, int]  # OFF, AUTO or a grid (rows, columns)
AUTO_ATTEMPTS = 3  # plans compiled by `auto` at most: each costs the passes, the code generation and the planning
MAX_GRID = 8  # rows and columns of a grid `auto` considers


def parse_patches(text: str) -> PatchRequest:
    """`off`, `auto` or `NxM` (N, M whole numbers from 1, not both 1); ValueError naming the value otherwise."""
    if text in (OFF, AUTO):
        return text
    found = re.fullmatch(r"([1-9][0-9]{0,3})x([1-9][0-9]{0,3})", text)
    if found is None or (found.group(1), found.group(2)) == ("1", "1"):
        raise ValueError(f"--patches takes off, auto or a grid NxM of patch rows and columns such as 2x4 "
                         f"(not 1x1), not {text!r}")
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

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_macs / self.model_macs if self.model_macs else 0.0

    def manifest_entry(self) -> dict:
        return {"cut_after_window_stage": self.cut, "cut_layer": self.cut_layer, "grid": list(self.grid),
                "arena_bytes_layer_by_layer": self.arena_before, "arena_bytes": self.arena_after,
                "extra_macs": self.extra_macs, "extra_macs_percent": round(self.extra_percent, 2)}

    def line(self) -> str:
        """One line: the plan, the arena before and after, the extra MACs in percent."""
        before = "" if self.arena_before is None else f"{self.arena_before:,} B layer by layer -> "
        return (f"{self.grid[0]}x{self.grid[1]} patches up to {self.cut_layer} (window stage {self.cut}): arena "
                f"{before}{self.arena_after:,} B, {self.extra_macs:,} extra MACs (+{self.extra_percent:.1f} %)")


def _window_chain(func):
    from tvm_ext.transform.patch_prefix import window_chain  # TVM: imported once a compile runs the passes

    return window_chain(func)


def plans_of(func) -> list[PatchPlan]:
    """Every plan (cut, grid up to MAX_GRID x MAX_GRID) of `func`'s window chain with the cost model's arena
    estimate, by estimate then extra MACs; [] without a chain."""
    chain = _window_chain(func)
    if chain is None:
        return []
    stages = chain.geometries
    return search(stages, lambda cut: layer_by_layer_peak(stages, cut) if cut < len(stages) else 0,
                  sum(s.macs for s in stages), MAX_GRID)


def plan_for_grid(func, grid: tuple[int, int]) -> PatchPlan | None:
    """The cut for `grid` of smallest estimated arena (then fewest extra MACs), None when no cut's output has
    that many rows and columns or `func` has no window chain."""
    chain = _window_chain(func)
    if chain is None:
        return None
    stages = chain.geometries
    plans = [plan_cost(stages, cut, grid, layer_by_layer_peak(stages, cut) if cut < len(stages) else 0,
                       sum(s.macs for s in stages))
             for cut in range(1, len(stages) + 1)
             if grid[0] <= stages[cut - 1].out_hw[0] and grid[1] <= stages[cut - 1].out_hw[1]]
    return min(plans, key=lambda p: (p.arena_bytes, p.extra_macs), default=None)


def auto_candidates(func, arena_budget: int) -> list[PatchPlan]:
    """The plans `auto` compiles, in order: estimated arena within `arena_budget` bytes, fewest extra MACs first
    (then smaller estimate); at most AUTO_ATTEMPTS."""
    fitting = [p for p in plans_of(func) if p.arena_bytes <= arena_budget]
    return sorted(fitting, key=lambda p: (p.extra_macs, p.arena_bytes))[:AUTO_ATTEMPTS]


def cut_of(plan: PatchPlan) -> PatchCut:
    return PatchCut(plan.cut, plan.grid)


def cut_layer(func, cut: int) -> str:
    """The label of the model layer whose output window stage `cut` of `func`'s chain ends with."""
    from tvm_ext.layers import Layers, bindings_of

    chain = _window_chain(func)
    output = chain.bindings[chain.stages[cut - 1].output].var
    position = next(i for i, b in enumerate(bindings_of(func)) if b.var.same_as(output))
    records = Layers.of(func).of_binding(position)
    return records[0].label if records else output.name


def patch_plan_for_grid(imported, request: PatchRequest, file_name: str) -> PatchPlan | None:
    """The plan of the grid `request` names for the imported model (None for off and auto); CompileError when
    the model has no window chain whose output has that many rows and columns."""
    if not isinstance(request, tuple):
        return None
    plan = plan_for_grid(imported.model.mod["main"], request)
    if plan is None:
        raise CompileError(f"{file_name}: --patches {request[0]}x{request[1]}: the model has no chain of windowed "
                           "NHWC stages from an input whose output has that many rows and columns")
    return plan


def grid_patch_facts(imported, plan: PatchPlan, planned) -> PatchFacts:
    """The facts of the grid's plan `plan` as compiled and planned (`planned`); no layer-by-layer arena."""
    macs = planned.plan.total_macs()
    func = imported.model.mod["main"]
    return PatchFacts(plan.cut, cut_layer(func, plan.cut), plan.grid, None, planned.memory.arena_bytes,
                      plan.extra_macs, macs - plan.extra_macs)


def auto_patches(imported, profile: Profile, planned, ram: RamUse,
                 compile_with: Callable[[PatchCut], tuple[Any, Any, Any, RamUse]]) -> tuple:
    """`auto` once the layer-by-layer bundle (`planned`, its RAM `ram`) does not fit `profile`'s SRAM: the first
    of `auto_candidates` whose planned RAM fits, compiled by `compile_with(cut)` -> (lowered, generated,
    planned, ram), returned as those four and its PatchFacts. DoesNotFitError (one line: layer by layer and
    at best patch by patch, each by how many bytes over) when none fits."""
    func = imported.model.mod["main"]
    macs = planned.plan.total_macs()
    budget = profile.sram_bytes - (ram.total_bytes - ram.arena_bytes)
    best = None
    # None within the budget: the plan of smallest estimate is compiled all the same, for the refusal's figure.
    plans = auto_candidates(func, budget) or plans_of(func)[:1]
    for plan in plans:
        lowered, generated, patched, patched_ram = compile_with(cut_of(plan))
        facts = PatchFacts(plan.cut, cut_layer(func, plan.cut), plan.grid, ram.arena_bytes, patched_ram.arena_bytes,
                           patched.plan.total_macs() - macs, macs)
        if patched_ram.total_bytes <= profile.sram_bytes:
            return lowered, generated, patched, patched_ram, facts
        if best is None or patched_ram.total_bytes < best[1].total_bytes:
            best = (facts, patched_ram)
    layer_by_layer, overruns = _refusal(profile, planned.plan.model, ram)
    if best is None:
        at_best = "no chain of windowed NHWC stages from a model input to run patch by patch"
    else:
        facts, patched_ram = best
        overruns = _refusal(profile, planned.plan.model, patched_ram)[1]
        at_best = (f"patch by patch at best ({facts.line()}) RAM needs {patched_ram.total_bytes:,} B "
                   f"({patched_ram.total_bytes - profile.sram_bytes:,} B over)")
    raise DoesNotFitError(f"{layer_by_layer}; {at_best}", overruns)


def _refusal(profile: Profile, model: str, ram: RamUse) -> tuple[str, tuple]:
    """The fit check's line and overruns for `ram` (which does not fit `profile`'s SRAM)."""
    try:
        check_fits(profile, model, ram, 0)
    except ResourceError as err:
        return str(err), err.overruns
    raise AssertionError(f"{model}: {ram.total_bytes:,} B of RAM fits {profile.name}: no refusal to give")
