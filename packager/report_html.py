"""`report.html`: one self-contained page per bundle that a person would rather look at than report.md and
memory_plan.svg: the profile's headroom, the per-layer table, each layer's quantization error (a quantized
compile's), the memory plan (the same drawing as memory_plan.svg, memory_planner.picture) and the model's
operators with their support.

Written from the same data objects as report.md and the manifest (packager.report's LayerReport, the memory
plan and its buffers, the headroom, the check's operators), never from their text. Per call
it gives the emulated self-test's instructions (per call and per unit of its kind's work) where the bundle ran
on an emulated core, else instructions estimated from its MACs and bytes (emulator.instruction_model, as
`--analyze` gives them); and the estimated time at the profile's clock where the core has a cycle model
(emulator.cycle_model). Estimates are labelled as such.

Self-contained: inline CSS, no script, no URL of any kind (the page's own `#` anchors aside); its
Content-Security-Policy forbids every fetch, so a browser opening it makes no request even if one crept in.
Every text that comes from the model or a profile (layer, tensor, kernel and profile names, refusals) is
`printable.markup_text`: one line, then escaped, so no name can become markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from emulator.instruction_model import DESCRIPTION as ESTIMATE_DESCRIPTION
from memory_planner.api import Buffer, MemoryPlan
from memory_planner.picture import arenas_svg
from memory_planner.plan import OperatorSupport
from memory_planner.regions import RegionArena
from packager.kernel_kinds import OVER_TARGET
from packager.report import (CallCost, LayerReport, per_unit_text, shapes_text, share_text,
                             times_target_text)
from printable import markup_text as _h
from target.resources import Headroom, RamUse, StackSource

REPORT_HTML_FILE = "report.html"

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
"""Nothing may be fetched or run: only the page's own inline styles apply."""

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
th { background: #eee; text-align: left; position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #f7f7f7; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tfoot td { font-weight: bold; background: #eee; }
code { font-size: 0.9em; }
td.l { min-width: 16em; max-width: 30em; overflow-wrap: anywhere; }
.kernel { font: 0.8em monospace; color: #666; word-break: break-all; }
.over { color: #b00000; font-weight: bold; }
.refused { color: #b00000; }
.note { color: #555; max-width: 70em; }
.untested { background: #fff3cd; padding: 0.4em; border: 1px solid #e0c060; }
.bar { width: 24em; height: 1em; background: #e6e6e6; border: 1px solid #999; display: inline-block; }
.bar span { display: block; height: 100%; background: #4a90d9; }
.bar span.full { background: #c0392b; }
svg { max-width: 100%; height: auto; }
"""


@dataclass(frozen=True)
class HtmlReport:
    """What report.html shows. `report` gives the calls and, in its `timing`, the core's cycle estimate (None:
    no time estimate); `headroom` is how the bundle fits its profile (target.Headroom: bytes); `operators` the
    model file's operator kinds (empty for a Relax module: its calls' operators are shown); `layer_errors` a
    quantized compile's per-layer errors (the manifest's `quantization.layer_errors`; empty when the model was
    not quantized); `regions` every RAM region's arena, fastest first, when the profile lists several
    (memory_planner.regions: `buffers` and `memory` are then the last region's; empty for one region)."""

    report: LayerReport
    buffers: Sequence[Buffer]
    memory: MemoryPlan
    headroom: Headroom
    operators: Sequence[OperatorSupport] = ()
    layer_errors: Sequence[Mapping[str, Any]] = ()
    regions: Sequence[RegionArena] = ()


def report_html(page: HtmlReport) -> str:
    """report.html's text."""
    report = page.report
    sections = [
        ("headroom", "Headroom", _headroom(page.headroom)),
        ("layers", "Layers", _layers(report)),
        *([("quantization", "Quantization error per layer", _layer_errors(page.layer_errors))]
          if page.layer_errors else []),
        ("memory", "Memory plan", _memory(page)),
        ("operators", "Operators", _operators(page.operators, report.calls)),
    ]
    untested = f'<p class="untested"><b>Untested</b>: {_h(report.untested)}.</p>' if report.untested else ""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        f"<title>{_h(report.model)}: tvm_ext report</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1><code>{_h(report.model)}</code></h1>",
        f"<p>Model {_h(report.source)}, target profile {_h(report.target)}, {len(report.calls)} kernel calls of the "
        "run function in execution order. The same facts as report.md, memory_plan.svg and manifest.json.</p>",
        untested,
        "<nav>" + "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title, _ in sections) + "</nav>",
        *(f'<h2 id="{anchor}">{title}</h2>\n{body}' for anchor, title, body in sections),
        "</body>",
        "</html>",
    ]) + "\n"


def _headroom(headroom: Headroom) -> str:
    """The RAM one inference holds, part by part, against the SRAM, and the weights against the flash."""
    ram, profile = headroom.ram, headroom.profile
    parts = [("arena", ram.arena_bytes),
             ("inputs outside the arena", ram.input_bytes),
             ("outputs outside the arena", ram.output_bytes),
             ("state", ram.state_bytes),
             (_stack_label(ram), ram.stack_bytes)]
    rows = [f"<tr><td>{_h(name)}</td><td class=\"n\">{value:,}</td><td></td><td></td></tr>" for name, value in parts]
    rows += [_fit_row("total RAM against the SRAM", ram.total_bytes, profile.sram_bytes),
             _fit_row(_flash_label(headroom), headroom.flash_used_bytes, profile.flash_bytes)]
    return (f"<p class=\"note\">Profile {_h(profile.name)} ({_h(profile.memory_source)}). Bytes.</p>\n"
            "<table><thead><tr><th>part</th><th>used B</th><th>of B (left)</th><th>share</th></tr></thead>\n"
            "<tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def _stack_label(ram: RamUse) -> str:
    """The stack row's name: its source, and the counted bound's parts (target.StackBound) where there is one."""
    if ram.stack_bound is None:
        return f"stack ({ram.stack_source.name.lower()})"
    bound = ram.stack_bound
    if ram.stack_source is StackSource.MEASURED:
        return f"stack (measured; counted without a build: {bound.bytes:,} B)"
    return f"stack ({ram.stack_source.name.lower()}: {bound.parts()})"


def _flash_label(headroom: Headroom) -> str:
    """The flash row's name: what its bytes count (the code only where the emulated build measured it)."""
    flash = headroom.flash
    if flash.measured:
        return (f"flash: weights {flash.weights_bytes:,} + code {flash.code_bytes:,} + data {flash.data_bytes:,}, "
                "measured in the linked self-test")
    return f"flash: weights only ({flash.source.value})"


def _fit_row(name: str, used: int, limit: int) -> str:
    share = used / limit if limit else 1.0
    full = ' class="full"' if used > limit else ""
    return (f"<tr><td><b>{_h(name)}</b></td><td class=\"n\">{used:,}</td>"
            f"<td class=\"n\">{limit:,} ({limit - used:,})</td>"
            f"<td><span class=\"bar\"><span{full} style=\"width: {min(share, 1.0) * 100:.1f}%\"></span></span> "
            f"{share * 100:.1f}%</td></tr>")


def _layers(report: LayerReport) -> str:
    """The per-call table: measured instructions where the bundle ran on an emulated core, else estimated ones
    (LayerReport.instructions_of), and their estimated time where the report has a cycle estimate."""
    timing = report.timing
    head = ["step", "layer(s) and kernel", "operator", "output shapes", "MACs", "weight B", "act. read B",
            "act. written B"]
    whole = report.inference_instructions or 0
    if report.measured:
        head += ["instructions", "share", "kind", "instr. per unit", "x target"]
        notes = ["Instructions: executed under QEMU -icount (not cycles) by the profiling build of the run "
                 "function; share of the whole inference; instructions per unit of the call's kernel kind's work "
                 f"(per MAC, or per byte), against the kind's target, <span class=\"over\">marked</span> above "
                 f"{OVER_TARGET}x."]
    else:
        head += ["est. instructions"]
        notes = [f"Instructions: {_h(report.not_measured or '')}. Est. instructions: an "
                 f"{_h(ESTIMATE_DESCRIPTION)}."]
    if timing is not None:
        head += ["est. us"]
        notes.append(f"Est. us: microseconds per call, an {_h(timing.describe())}"
                     + ("" if report.measured else ", applied to the estimated instructions") + ".")
    rows = []
    for call in report.calls:
        cells = [f'<td class="n">{call.step}</td>',
                 f'<td class="l">{_layer_names(call)}<div class="kernel">{_h(call.kernel)}</div></td>',
                 f"<td>{' + '.join(_h(op.kind) for op in call.operators) or '-'}</td>",
                 f"<td>{shapes_text(call.output_shapes)}</td>",
                 *(_number(value) for value in (call.macs, call.weight_bytes, call.activation_read_bytes,
                                                call.activation_written_bytes))]
        if report.measured:
            per_unit = ' class="n"' if call.instructions_per_unit is not None else ""
            times = "" if call.times_target is None else ' class="n over"' if call.over_target else ' class="n"'
            cells += [_number(call.instructions or 0),
                      f'<td class="n">{share_text(call.instructions or 0, whole)}</td>',
                      f"<td>{_h(call.kind.name)}</td>",
                      f"<td{per_unit}>{_h(per_unit_text(call))}</td>",
                      f"<td{times}>{times_target_text(call)}</td>"]
        else:
            cells.append(_number(round(report.instructions_of(call))))
        if timing is not None:
            cells.append(f'<td class="n">{report.microseconds_of(call):,.1f}</td>')
        rows.append(f'<tr id="step-{call.step}">' + "".join(cells) + "</tr>")
    return ("\n".join(f'<p class="note">{note}</p>' for note in notes)
            + '\n<table id="layer-table"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead>\n"
            + "<tbody>\n" + "\n".join(rows) + "\n</tbody>\n" + _totals(report, len(head)) + "</table>")


def _totals(report: LayerReport, columns: int) -> str:
    """The table's footer: the whole inference's MACs, bytes, instructions and time."""
    timing = report.timing
    totals = report.totals()
    facts = [f"MACs {totals['macs']:,}", f"weights stored {totals['weight_bytes_stored']:,} B"]
    if report.measured:
        instructions = report.inference_instructions or 0
        facts.append(f"instructions per inference {instructions:,} (QEMU -icount)")
    else:
        instructions = round(sum(report.instructions_of(call) for call in report.calls))
        facts.append(f"estimated instructions {instructions:,}")
    if timing is not None:
        facts.append(f"estimated time per inference {timing.microseconds(instructions) / 1000:,.3f} ms "
                     f"at {timing.clock_hz / 1e6:g} MHz")
    return f'<tfoot><tr><td colspan="{columns}">{"; ".join(facts)}</td></tr></tfoot>'


def _layer_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """A quantized compile's per-layer errors (tvm_ext.quantize.layer_error's facts)."""
    rows = []
    for error in errors:
        added = error.get("added_error")
        rows.append(f"<tr><td>{_h(str(error['layer']))}</td><td class=\"n\">{100 * error['relative_error']:.2f}%</td>"
                    f"<td class=\"n\">{'-' if added is None else f'{100 * added:.2f}%'}</td>"
                    f"<td>{_h(str(error['precision']))}</td></tr>")
    return ('<p class="note">Each layer\'s output with every layer quantized against the float model\'s, on the '
            "calibration samples: relative L2 error (it accumulates the earlier layers' error); added: the part "
            "the layer adds; precision: what the layer runs in.</p>\n"
            '<table id="layer-error-table"><thead><tr><th>layer</th><th>relative error</th><th>added</th>'
            "<th>precision</th></tr></thead>\n"
            "<tbody>\n" + "\n".join(rows) + "\n</tbody></table>")


def _memory(page: HtmlReport) -> str:
    regions = (f" One arena per RAM region, fastest first ({', '.join(_h(arena.region) for arena in page.regions)}),"
               " each drawn in a lane of its own over the same kernel calls." if len(page.regions) > 1 else "")
    return ('<p class="note">Every arena buffer as a rectangle over the kernel calls it lives through; hover one '
            "for its name, bytes and offset. The byte axis is linear except that each buffer is at least a few "
            f"pixels tall.{regions}</p>\n" + arenas_svg(page.buffers, page.memory, page.regions, standalone=False))


def _operators(operators: Sequence[OperatorSupport], calls: Sequence[CallCost]) -> str:
    """The model file's operator kinds and their support; without them (a Relax module), its calls' kinds."""
    if operators:
        note = "The model file's operators, as the model check found them, and whether our compiler supports each."
        rows = [(row.op, row.count, row.refusal) for row in operators]
    else:
        note = "The operators the kernel calls implement (the model came as a Relax module, not a file)."
        rows = [(kind, count, None) for kind, count in
                Counter(op.kind for call in calls for op in call.operators).items()]
    body = "\n".join(
        f"<tr><td>{_h(op)}</td><td class=\"n\">{count}</td>"
        + ("<td>supported</td>" if refusal is None else f'<td class="refused">refused: {_h(refusal)}</td>')
        + "</tr>" for op, count, refusal in rows)
    return (f'<p class="note">{note}</p>\n<table id="operator-table"><thead><tr><th>operator</th><th>count</th>'
            "<th>support</th></tr></thead>\n<tbody>\n" + body + "\n</tbody></table>")


def _layer_names(call: CallCost) -> str:
    """The model operators of `call` as `name #index` (its plan labels when it has no operators)."""
    if call.operators:
        return "<br>".join(f'<span class="layer">{_h(op.name)}</span> #{op.index}' for op in call.operators)
    return "<br>".join(f'<span class="layer">{_h(label)}</span>' for label in call.labels) or "-"


def _number(value: int) -> str:
    return f'<td class="n">{value:,}</td>'
