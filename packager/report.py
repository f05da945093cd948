"""`report.md` and the manifest's `layer_report`: per kernel call of the run function, where the work, the bytes
and (on an emulated core) the instructions go, as STM32Cube.AI's analyze report and TFLM's MicroProfiler show.

Written from plain data: the plan (each call's model operators, MACs, tensors) and the profiling build's
per-call instruction counts (emulator.profile), never from TVM objects. Per call:
- MACs: multiply-accumulates (tvm_ext.plan.macs: reductions of products; padded taps count);
- weight bytes: the constants the call reads (a constant read by two calls counts in both; the totals also
  give the bytes stored, each constant once);
- activation bytes read: the non-constant inputs the call reads (model inputs, activations, state);
  written: its outputs. Scratch buffers count in neither;
- instructions (emulated profiles only): executed under QEMU -icount (not cycles), by the profiling build;
- kind (packager.kernel_kinds): the call's kernel kind, its work in that kind's unit (MACs, or bytes for data
  movement, elementwise work, pools) and, where the profile has targets, its instructions per unit against its
  kind's target: a call more than OVER_TARGET times above it is marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from emulator.cycle_model import CycleEstimate
from emulator.instruction_model import estimated_instructions
from memory_planner.plan import ExecutionPlan, KernelCall, ModelOperator, TensorRole
from packager.kernel_kinds import OVER_TARGET, KINDS, KernelKind, kernel_kind, work_units
from packager.markdown_text import markdown_text

REPORT_FILE = "report.md"

NOT_MEASURED = ("not measured (the {target} profile's self-test runs on the host, not on an emulated core; "
                "compile for a Cortex-M profile, cortex-m0plus, cortex-m4f, cortex-m7 or cortex-m33, to count "
                "instructions per call)")
"""Why a report has no instruction columns (formatted with the target's name)."""

@dataclass(frozen=True)
class CallCost:
    """One kernel call: what it implements, its shapes and its costs (bytes are bytes)."""

    step: int
    kernel: str
    operators: tuple[ModelOperator, ...]  # the model operators it implements (none in a hand-made plan)
    labels: tuple[str, ...]  # the plan's labels of those operators (the bundle's comments)
    input_shapes: tuple[tuple[int, ...], ...]  # the non-constant inputs'
    output_shapes: tuple[tuple[int, ...], ...]
    macs: int
    weight_bytes: int
    activation_read_bytes: int
    activation_written_bytes: int
    instructions: Optional[int]
    kind: KernelKind
    work: int  # units of work of its kind (kind.unit: MACs or bytes)
    target: Optional[float]  # its kind's instructions per unit on this profile (None: no target)

    @property
    def instructions_per_mac(self) -> Optional[float]:
        return self.instructions / self.macs if self.instructions is not None and self.macs else None

    @property
    def instructions_per_unit(self) -> Optional[float]:
        return self.instructions / self.work if self.instructions is not None and self.work else None

    @property
    def estimated_instructions(self) -> float:
        """Its instructions estimated from its MACs and activation bytes alone (emulator.instruction_model: an
        estimate made without a build, as `--analyze` gives)."""
        return estimated_instructions(self.operators[0].kind if self.operators else None, self.macs,
                                      self.activation_read_bytes + self.activation_written_bytes)

    @property
    def uncounted(self) -> bool:
        """Whether its kind does MACs but none were counted (its instructions per MAC unknown)."""
        return self.kind.unit == "MAC" and not self.work

    @property
    def times_target(self) -> Optional[float]:
        """Its instructions per unit over its kind's target (None: not measured, no work or no target)."""
        per_unit = self.instructions_per_unit
        return per_unit / self.target if per_unit is not None and self.target else None

    @property
    def over_target(self) -> bool:
        """Whether it runs more than OVER_TARGET times its kind's target."""
        return (self.times_target or 0.0) > OVER_TARGET


@dataclass(frozen=True)
class LayerReport:
    """The per-call report of one bundle. `inference_instructions` is the shipped run function's count of one
    whole inference (None off an emulated core); `not_measured` says why there are no instruction counts;
    `untested` why the bundle was neither built nor self-tested (None: it was); `profiled_sources` the
    profiling build's run-function files that counted the calls, as a pattern relative to the bundle
    (`EmulatedRunner.profiled_model_source("*")`: cortex_m/*_model_profiled.c)."""

    model: str
    source: str
    target: str
    calls: tuple[CallCost, ...]
    inference_instructions: Optional[int]
    not_measured: Optional[str]
    weight_bytes_stored: int  # the bundle's constants, each once however many calls read it
    untested: Optional[str] = None  # why the bundle was not built and self-tested (None: it was)
    timing: Optional[CycleEstimate] = None  # the core's estimated cycles and clock (None: no time estimate)
    profiled_sources: Optional[str] = None

    @property
    def estimated(self) -> bool:
        """Whether the report gives estimated times (instruction counts and a core's cycle estimate)."""
        return self.measured and self.timing is not None

    @property
    def measured(self) -> bool:
        return self.not_measured is None

    @property
    def total_macs(self) -> int:
        return sum(c.macs for c in self.calls)

    def instructions_of(self, call: CallCost) -> float:
        """`call`'s instructions: its measured count, else its estimate (CallCost.estimated_instructions)."""
        return (call.instructions or 0) if self.measured else call.estimated_instructions

    def microseconds_of(self, call: CallCost) -> Optional[float]:
        """`call`'s estimated time in microseconds: `instructions_of` at the core's cycle estimate (None: the
        report has no `timing`)."""
        return None if self.timing is None else self.timing.microseconds(round(self.instructions_of(call)))

    @property
    def call_instructions(self) -> Optional[int]:
        """The sum of the calls' instructions (None when not measured)."""
        return sum(c.instructions or 0 for c in self.calls) if self.measured else None

    def facts(self) -> dict[str, Any]:
        """The manifest's `layer_report` entry: the same facts as report.md."""
        calls = []
        for c in self.calls:
            entry: dict[str, Any] = {
                "step": c.step, "kernel": c.kernel,
                "layers": [{"name": op.name, "operator": op.kind, "index": op.index} for op in c.operators],
                "input_shapes": [list(s) for s in c.input_shapes], "output_shapes": [list(s) for s in c.output_shapes],
                "macs": c.macs, "weight_bytes": c.weight_bytes, "activation_read_bytes": c.activation_read_bytes,
                "activation_written_bytes": c.activation_written_bytes,
            }
            entry["kind"] = {"name": c.kind.name, "unit": c.kind.unit, "work": c.work, "macs_counted": not c.uncounted}
            if self.measured:
                entry["instructions"] = c.instructions
                entry["instructions_per_mac"] = c.instructions_per_mac
                entry["kind"].update({"instructions_per_unit": c.instructions_per_unit,
                                      "target_instructions_per_unit": c.target, "times_target": c.times_target,
                                      "over_target": c.over_target})
            if self.estimated:
                entry["estimated_microseconds"] = self.microseconds_of(c)
            calls.append(entry)
        facts = {"calls": calls, "totals": self.totals(),
                 "instructions": "QEMU -icount, not cycles, by the profiling build of the run function"
                 if self.measured else self.not_measured}
        if self.estimated:
            facts["estimated_time"] = self.timing.describe()
        if self.measured:
            facts["kinds"] = self.kind_summary()
        return facts

    def kind_summary(self) -> list[dict[str, Any]]:
        """Per kernel kind present (KINDS' order): its calls, instructions, work, instructions per unit over
        all its calls, its worst call's step and instructions per unit, the target, and how many calls are
        more than OVER_TARGET times above it (measured reports only)."""
        summary = []
        for kind in KINDS:
            calls = [c for c in self.calls if c.kind is kind]
            if not calls:
                continue
            instructions, work = sum(c.instructions or 0 for c in calls), sum(c.work for c in calls)
            rated = [c for c in calls if c.instructions_per_unit is not None]
            worst = max(rated, key=lambda c: c.instructions_per_unit, default=None)
            summary.append({
                "kind": kind.name, "unit": kind.unit, "calls": len(calls), "instructions": instructions,
                "work": work, "instructions_per_unit": instructions / work if work else None,
                "worst_step": worst.step if worst else None,
                "worst_instructions_per_unit": worst.instructions_per_unit if worst else None,
                # A kind's float calls have no target: the target is that of its calls that have one.
                "target_instructions_per_unit": next((c.target for c in calls if c.target is not None), None),
                "calls_over_target": sum(c.over_target for c in calls),
                "calls_macs_not_counted": sum(c.uncounted for c in calls),
            })
        return summary

    def totals(self) -> dict[str, Any]:
        """The manifest's `layer_report.totals`: sums over the calls (bytes), the bytes stored, and when measured
        the instruction counts (and the estimated time of one inference, in microseconds)."""
        totals: dict[str, Any] = {
            "macs": self.total_macs,
            "weight_bytes": sum(c.weight_bytes for c in self.calls),
            "weight_bytes_stored": self.weight_bytes_stored,
            "activation_read_bytes": sum(c.activation_read_bytes for c in self.calls),
            "activation_written_bytes": sum(c.activation_written_bytes for c in self.calls),
        }
        if self.measured:
            totals["call_instructions"] = self.call_instructions
            totals["inference_instructions"] = self.inference_instructions
        if self.estimated:
            totals["estimated_inference_microseconds"] = self.timing.microseconds(self.inference_instructions or 0)
        return totals

    def markdown(self) -> str:
        """report.md's text."""
        head = ["step", "layer(s)", "operator", "kernel", "input shapes", "output shapes", "MACs", "weight B",
                "act. read B", "act. written B"] + (["instructions", "share", "instr./MAC", "kind",
                                                     "instr. per unit", "x target"] if self.measured else [])
        head += ["est. us"] if self.estimated else []
        total_instructions = self.inference_instructions or 0
        lines = [
            f"# Per-layer report: `{self.model}`",
            "",
            f"Model {markdown_text(self.source)}, target profile {markdown_text(self.target)}, {len(self.calls)} kernel calls of the "
            "run function in execution order. MACs: multiply-accumulates of the convolutions, depthwise "
            "convolutions, fully connected layers, matrix multiplies and recurrent cells' gate and state products "
            "(padded taps count). Weight bytes: the "
            "constants a call reads. Activation bytes: what a call reads (inputs, activations, state) and writes.",
            "",
        ]
        if self.untested:
            lines += [f"**Untested**: {self.untested}.", ""]
        if self.measured:
            lines += [
                "Instructions: executed under QEMU -icount (instructions, not cycles), counted around each call by "
                "the bundle's own instruction counter in a profiling build of the run function "
                f"({self.profiled_sources}, `make qemu-profile`); the shipped library is not that build. "
                "Share: of the whole inference as the shipped run function runs it. Kind: the call's kernel kind "
                "(packager/kernel_kinds.py); instr. per unit: its instructions per MAC, or per byte for kinds "
                "without MACs (pools: per byte read; elementwise: per byte written and fused operator; others: "
                f"per byte written); x target: that over its kind's target, **bold** above {OVER_TARGET}x.",
                "",
            ]
        else:
            lines += [f"Instructions per call: {self.not_measured}.", ""]
        if self.estimated:
            lines += [f"Est. us: estimated microseconds per call, an {self.timing.describe()}.", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for c in self.calls:
            cells = [str(c.step), _layers(c), " + ".join(markdown_text(op.kind) for op in c.operators) or "-", f"`{c.kernel}`",
                     shapes_text(c.input_shapes), shapes_text(c.output_shapes), f"{c.macs:,}", f"{c.weight_bytes:,}",
                     f"{c.activation_read_bytes:,}", f"{c.activation_written_bytes:,}"]
            if self.measured:
                cells += [f"{c.instructions:,}", share_text(c.instructions or 0, total_instructions),
                          _per_mac(c.instructions_per_mac), c.kind.name, per_unit_text(c), _times_target(c)]
            if self.estimated:
                cells.append(f"{self.microseconds_of(c):,.1f}")
            lines.append("| " + " | ".join(cells) + " |")
        facts = self.totals()
        lines += ["", "## Totals", "",
                  f"- MACs: {facts['macs']:,}",
                  f"- weight bytes read: {facts['weight_bytes']:,}; stored (each constant once): "
                  f"{facts['weight_bytes_stored']:,}",
                  f"- activation bytes read: {facts['activation_read_bytes']:,}, written: "
                  f"{facts['activation_written_bytes']:,}"]
        if self.measured:
            calls_total = self.call_instructions or 0
            lines += [
                f"- instructions per inference (shipped run function): {total_instructions:,}",
                f"- instructions of the calls: {calls_total:,} ({share_text(calls_total, total_instructions)}); "
                f"the rest, {total_instructions - calls_total:,}, is the run function's own code (argument "
                "checks, return) and the counter's own instructions",
                f"- instructions per MAC: {_per_mac(total_instructions / self.total_macs if self.total_macs else None)}",
            ]
            if self.estimated:
                milliseconds = self.timing.microseconds(total_instructions) / 1000
                lines.append(f"- estimated time per inference: {milliseconds:,.3f} ms ({self.timing.describe()})")
            lines += self._kind_lines()
        else:
            lines.append(f"- instructions: {self.not_measured}")
        return "\n".join(lines) + "\n"

    def _kind_lines(self) -> list[str]:
        """report.md's per-kind table (kind_summary)."""
        lines = ["", "## Per kernel kind", "",
                 "| kind | calls | instructions | share | instr. per unit | worst call | target | calls over "
                 f"{OVER_TARGET}x target | calls with MACs not counted |", "|" + "---|" * 9]
        whole = self.inference_instructions or 0
        for kind in self.kind_summary():
            unit = kind["unit"]
            worst = (f"step {kind['worst_step']}: {kind['worst_instructions_per_unit']:.1f}"
                     if kind["worst_step"] is not None else "-")
            target = kind["target_instructions_per_unit"]
            per_unit = kind["instructions_per_unit"]
            lines.append(f"| {kind['kind']} | {kind['calls']} | {kind['instructions']:,} | "
                         f"{share_text(kind['instructions'], whole)} | "
                         f"{f'{per_unit:.1f} per {unit}' if per_unit is not None else '-'} | {worst} | "
                         f"{f'{target:g}' if target else '-'} | {kind['calls_over_target']} | "
                         f"{kind['calls_macs_not_counted']} |")
        return lines


def layer_report(plan: ExecutionPlan, call_instructions: Optional[Sequence[int]],
                 inference_instructions: Optional[int], untested: Optional[str] = None,
                 timing: Optional[CycleEstimate] = None,
                 targets: Optional[Mapping[KernelKind, float]] = None,
                 profiled_sources: Optional[str] = None) -> LayerReport:
    """The report of `plan` (its calls in execution order). `call_instructions` holds one count per call, in the
    same order, when the bundle ran on an emulated core (else None); `untested` says why the bundle was not
    built and self-tested (None: it was); `timing` gives estimated times from the instruction counts, measured or
    else estimated (LayerReport.microseconds_of; report.md and the manifest give measured ones' only; None: no
    estimate); `targets` maps kernel kinds to the profile's instructions per unit of an integer kernel
    (backends.backend.Backend.kind_targets; None: no targets; a call writing a float output gets none);
    `profiled_sources` names the profiling build's run-function files (LayerReport).
    ValueError when the counts do not match the calls one to one."""
    if call_instructions is not None and len(call_instructions) != len(plan.calls):
        raise ValueError(f"{len(call_instructions)} instruction counts for the {len(plan.calls)} calls of {plan.model}")
    calls = tuple(
        _call_cost(plan, step, call, call_instructions[step] if call_instructions is not None else None, targets)
        for step, call in enumerate(plan.calls)
    )
    not_measured = None if call_instructions is not None else (
        "not measured (untested)" if untested else NOT_MEASURED.format(target=plan.target))
    return LayerReport(plan.model, plan.source, plan.target, calls, inference_instructions, not_measured,
                       plan.weight_bytes(), untested, timing, profiled_sources)


def _call_cost(plan: ExecutionPlan, step: int, call: KernelCall, instructions: Optional[int],
               targets: Optional[Mapping[KernelKind, float]]) -> CallCost:
    inputs = [plan.tensors[name] for name in call.inputs]
    weights = [t for t in inputs if plan.tensors[plan.storage_of(t.name)].role is TensorRole.CONSTANT]
    activations = [t for t in inputs if t not in weights]
    outputs = [plan.tensors[name] for name in call.outputs]
    operators = [op.kind for op in call.operators]
    kind = kernel_kind(operators, call.macs)
    read, written = sum(t.nbytes for t in activations), sum(t.nbytes for t in outputs)
    return CallCost(
        step=step, kernel=call.kernel, operators=call.operators, labels=call.layers,
        input_shapes=tuple(t.shape for t in activations), output_shapes=tuple(t.shape for t in outputs),
        macs=call.macs, weight_bytes=sum(t.nbytes for t in weights),
        activation_read_bytes=read, activation_written_bytes=written, instructions=instructions, kind=kind,
        work=work_units(kind, operators, call.macs, read, written),
        target=(targets or {}).get(kind) if all(_integer(t.dtype) for t in outputs) else None,
    )


def _integer(dtype: str) -> bool:
    """Whether `dtype` is an integer type (the kinds' targets are those of integer kernels)."""
    return dtype.startswith(("int", "uint"))


def _layers(call: CallCost) -> str:
    """The model operators of `call` as `name #index` (their plan labels when the plan has no operators)."""
    if call.operators:
        return "; ".join(f"{markdown_text(op.name)} #{op.index}".lstrip() for op in call.operators)
    return "; ".join(markdown_text(label) for label in call.labels) or "-"


def shapes_text(shapes: tuple[tuple[int, ...], ...]) -> str:
    """Shapes as `1x49x10x1, 12` (`scalar` for a shape without dimensions, `-` for none)."""
    return ", ".join("x".join(str(d) for d in shape) or "scalar" for shape in shapes) or "-"


def share_text(part: int, whole: int) -> str:
    """`part` as a percentage of `whole` (`-` when `whole` is 0)."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _per_mac(value: Optional[float]) -> str:
    return f"{value:.1f}" if value is not None else "-"


def per_unit_text(call: CallCost) -> str:
    """Its instructions per unit of its kind's work (`2.0 per MAC`), or why there is none."""
    if call.uncounted:
        return "MACs not counted"
    per_unit = call.instructions_per_unit
    return f"{per_unit:.1f} per {call.kind.unit}" if per_unit is not None else "-"


def times_target_text(call: CallCost) -> str:
    """Its instructions per unit over its kind's target (`1.3x`; `-`: none)."""
    times = call.times_target
    return "-" if times is None else f"{times:.1f}x"


def _times_target(call: CallCost) -> str:
    """times_target_text, bold when over OVER_TARGET."""
    return f"**{times_target_text(call)}**" if call.over_target else times_target_text(call)
