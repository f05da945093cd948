"""Which kernels take a form with less scratch: those whose scratch makes the planned arena larger.

A kernel's scratch (`memory_planner.plan.TensorRole.SCRATCH`: an internal buffer the arena holds for its call) is
sized when the kernel is scheduled, for speed: the DSP cores' fused pair tiles widen a pixel pair's inputs once
into a scratch of int32 words (`backends.cortex_m.schedules.pair_tiles`). Where that scratch is live at the
arena's peak it sets the arena: str_ww_ref_model on cortex-m4f, whose 24x1x128 1x1 convolution's 512 B of widened
inputs sat on top of its 3,072 B input and output (arena 3,840 B, 3,712 B without it).

The choice is the memory plan's, as `tvm_ext.compile.reversed_loops` makes its own: the backend says which
kernels have a form with less scratch and what it costs (`backends.backend.KernelSchedules.scratch_free_form`:
the scratch buffers it frees and the instructions it adds, an estimate). `forms_to_take` tries them, those whose
scratch is live where the most bytes are (the liveness peak first), at most `MAX_TRIED`, each one planning of the
plan with that kernel's calls' freed scratch left out, and keeps a kernel's form only when the planned arena
shrinks; it stops at the liveness bound of the plan without those scratches. The caller then generates the
chosen kernels in their form, plans again (the independent checker verifies that plan as any other), and keeps
the result only when its arena is smaller still: every other kernel keeps its fast form, and a model whose plan
does not improve keeps its bundle byte for byte. The bytes saved and the instructions added are the planning
line's (`ScratchChoice.phrase`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from backends.backend import ScratchFreeForm
from memory_planner.api import Buffer, MemoryPlan
from memory_planner.liveness import bytes_live_per_step
from memory_planner.plan import ExecutionPlan

MAX_TRIED = 4  # kernels tried per model: each try is one planning


@dataclass(frozen=True)
class ScratchChoice:
    """The kernels (C names) that take their form with less scratch (`forms`), the planned arena before and after
    (bytes) and the instructions per inference the forms add, an estimate (each form's per call, times its calls)."""

    forms: Mapping[str, ScratchFreeForm]
    arena_before: int
    arena_after: int
    _extra: Mapping[str, int] = field(default_factory=dict)  # per kernel, the instructions estimated per inference

    @staticmethod
    def of(plan: ExecutionPlan, forms: Mapping[str, ScratchFreeForm], arena_before: int,
           arena_after: int) -> "ScratchChoice":
        """The choice of `forms` in `plan` (whose calls' MACs count each form's instructions)."""
        extra = {name: round(form.extra_per_mac * sum(call.macs for call in plan.calls if call.kernel == name))
                 for name, form in forms.items()}
        return ScratchChoice(forms, arena_before, arena_after, extra)

    @property
    def extra_instructions(self) -> int:
        """The instructions per inference the forms add, an estimate."""
        return sum(self._extra.values())

    @staticmethod
    def kept(arena_bytes: int) -> "ScratchChoice":
        """No form taken: every kernel keeps its scratch, the planned arena `arena_bytes` (bytes)."""
        return ScratchChoice({}, arena_bytes, arena_bytes)

    def none(self) -> "ScratchChoice":
        """No form taken, at the arena this choice started from."""
        return ScratchChoice.kept(self.arena_before)

    def manifest_entry(self) -> dict | None:
        """The manifest's `scratch_forms` entry (None when no form was taken): per kernel the scratch bytes freed and
        the instructions estimated (per inference), the arenas with and without, and the instructions in all."""
        if not self.forms:
            return None
        return {"kernels": {name: {"scratch_bytes_freed": sum(nbytes for _, nbytes in form.freed),
                                   "extra_instructions": self._extra[name]} for name, form in self.forms.items()},
                "arena_bytes_with_scratch": self.arena_before, "arena_bytes": self.arena_after,
                "extra_instructions": self.extra_instructions}

    def summary(self) -> str:
        """"N kernel(s) without scratch (-B B of arena, ~+I instructions estimated)" (empty when none): the bytes
        saved and the instructions added, for a line to place where it reads."""
        if not self.forms:
            return ""
        count = len(self.forms)
        return (f"{count} kernel{'s' if count > 1 else ''} without scratch "
                f"(-{self.arena_before - self.arena_after:,} B of arena, ~+{self.extra_instructions:,} instructions "
                "estimated)")

    def phrase(self) -> str:
        """", " and the `summary`, to append to the planning line (empty when none)."""
        return f", {self.summary()}" if self.forms else ""


def without_freed_scratch(plan: ExecutionPlan, kernel: str, freed: tuple[tuple[str, int], ...]) -> ExecutionPlan:
    """`plan` with each call of `kernel` (a C name) without the scratch tensors `freed` lists ((dtype, bytes),
    each once per call), and those tensors gone."""
    gone: set[str] = set()
    calls = []
    for call in plan.calls:
        if call.kernel != kernel:
            calls.append(call)
            continue
        left = list(freed)
        kept = []
        for name in call.scratch:
            tensor = plan.tensors[name]
            if (tensor.dtype, tensor.nbytes) in left:
                left.remove((tensor.dtype, tensor.nbytes))
                gone.add(name)
            else:
                kept.append(name)
        calls.append(replace(call, scratch=tuple(kept)))
    tensors = {name: tensor for name, tensor in plan.tensors.items() if name not in gone}
    return replace(plan, calls=calls, tensors=tensors)


def _scratch_bytes_by_kernel(plan: ExecutionPlan) -> dict[str, int]:
    """Per kernel (C name), the most scratch bytes one of its calls holds."""
    found: dict[str, int] = {}
    for call in plan.calls:
        if call.scratch:
            held = sum(plan.tensors[name].nbytes for name in call.scratch)
            found[call.kernel] = max(found.get(call.kernel, 0), held)
    return found


def live_bytes_by_kernel(plan: ExecutionPlan, buffers: Sequence[Buffer]) -> dict[str, int]:
    """Per kernel (C name) of `plan` (in its call order, whose arena buffers are `buffers`), the most bytes live
    during one of its calls (in-place hand-overs counted once)."""
    found: dict[str, int] = {}
    for call, live in zip(plan.calls, bytes_live_per_step(buffers)):
        found[call.kernel] = max(found.get(call.kernel, 0), live)
    return found


def forms_to_take(plan: ExecutionPlan, buffers: Sequence[Buffer], memory: MemoryPlan,
                  forms: Mapping[str, ScratchFreeForm],
                  arena_of: Callable[[ExecutionPlan], MemoryPlan]) -> dict[str, ScratchFreeForm]:
    """The kernels (C names) of `forms` (each kernel's form with less scratch) to take, chosen greedily (module
    docstring) from `plan` (in its call order), its arena buffers `buffers` and its memory plan `memory`;
    `arena_of(plan)` plans a plan. Empty when no form makes the arena smaller."""
    with_scratch = _scratch_bytes_by_kernel(plan)
    live = live_bytes_by_kernel(plan, buffers)
    candidates = sorted((name for name in forms if with_scratch.get(name, 0) > 0),
                        key=lambda name: (-live.get(name, 0), name))
    chosen: dict[str, ScratchFreeForm] = {}
    best, trial = memory, plan
    for kernel in candidates[:MAX_TRIED]:
        if best.arena_bytes <= best.lower_bound and live.get(kernel, 0) < best.arena_bytes:
            break  # at the liveness bound, which this kernel's scratch (nor any later one's) does not set
        candidate = without_freed_scratch(trial, kernel, forms[kernel].freed)
        planned = arena_of(candidate)
        if planned.arena_bytes < best.arena_bytes:
            chosen[kernel], best, trial = forms[kernel], planned, candidate
    return chosen


def without_forms(plan: ExecutionPlan, forms: Mapping[str, ScratchFreeForm]) -> ExecutionPlan:
    """`plan` with the calls of each kernel of `forms` without the scratch its form frees."""
    for kernel, form in forms.items():
        plan = without_freed_scratch(plan, kernel, form.freed)
    return plan


def fewest_forms(plan: ExecutionPlan, chosen: Mapping[str, ScratchFreeForm],
                 arena_of: Callable[[ExecutionPlan], int]) -> dict[str, ScratchFreeForm]:
    """`chosen` without the forms the arena does not need: from the one that adds most instructions on, a form is
    left out where `arena_of` (the planned arena of a plan, its other choices made again: which convolutions run
    backwards) of `plan` (the forward plan, every kernel with its scratch) with the forms left is no larger than with
    all of `chosen`."""
    kept = dict(chosen)
    if len(kept) < 2:
        return kept
    target = arena_of(without_forms(plan, kept))
    macs: dict[str, int] = {}
    for call in plan.calls:
        macs[call.kernel] = macs.get(call.kernel, 0) + call.macs
    for kernel in sorted(chosen, key=lambda name: (-chosen[name].extra_per_mac * macs.get(name, 0), name)):
        if len(kept) == 1:
            break
        fewer = {name: form for name, form in kept.items() if name != kernel}
        if arena_of(without_forms(plan, fewer)) <= target:
            kept = fewer
    return kept
