"""The text `--analyze` prints from an `Analysis`: a per-layer table for one profile, and one row per profile.

Plain text columns for a terminal; every cell from the model (operator names) goes through `printable` at the
caller's print. Bytes are bytes; times are estimates and headed so (`emulator.instruction_model`).
"""

from __future__ import annotations

from emulator.instruction_model import DESCRIPTION
from tvm_ext.compile.analyze import Analysis, ProfileAnalysis

SUMMARY_HEAD = ("profile", "MACs", "weights B", "activations B", "arena B", "total RAM B / SRAM", "flash B / flash",
                "fits", "est. ms")


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]], left: int = 1) -> list[str]:
    """Columns padded to their widest cell: the first `left` columns aligned left, the others right."""
    widths = [max(len(cell) for cell in column) for column in zip(head, *rows)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) if index < left else cell.rjust(width)
                         for index, (cell, width) in enumerate(zip(cells, widths))).rstrip()

    return [line(head), line(tuple("-" * width for width in widths)), *(line(row) for row in rows)]


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _milliseconds(microseconds: float | None) -> str:
    return "-" if microseconds is None else f"{microseconds / 1000:,.2f}"


def summary_row(result: ProfileAnalysis) -> tuple[str, ...]:
    """One profile's row under SUMMARY_HEAD."""
    profile = result.profile
    return (profile.name, _number(result.macs), _number(result.weight_bytes), _number(result.activation_bytes),
            _number(result.arena_bytes), f"{_number(result.total_ram_bytes)} / {profile.sram_bytes:,}",
            f"{_number(result.weight_bytes)} / {profile.flash_bytes:,}", "yes" if result.fits else "NO",
            _milliseconds(result.estimated_microseconds))


def layer_lines(result: ProfileAnalysis) -> list[str]:
    """The per-layer table of one profile, headed by what its times are."""
    rows = [(str(layer.step), layer.operators, f"{layer.macs:,}", f"{layer.weight_bytes:,}",
             f"{layer.activation_bytes:,}",
             "-" if layer.estimated_microseconds is None else f"{layer.estimated_microseconds:,.1f}")
            for layer in result.layers]
    return _table(("step", "operator(s)", "MACs", "weight B", "activation B", "est. us"), rows, left=2)


def analysis_text(analysis: Analysis) -> str:
    """What `--analyze` prints after the stage lines: the operators' verdict, then for one profile its layers and
    totals, for several one row each; and what the figures are."""
    lines = [f"{analysis.model}: {sum(row.count for row in analysis.operators)} operators of "
             f"{len({row.op for row in analysis.operators})} kinds, "
             + ("all supported" if analysis.supported else
                f"{sum(row.count for row in analysis.operators if row.refusal)} unsupported")]
    if not analysis.profiles:
        return "\n".join(lines) + "\n"
    if len(analysis.profiles) == 1 and analysis.profiles[0].layers:
        lines += ["", f"Per kernel call on {analysis.profiles[0].profile.name}:", *layer_lines(analysis.profiles[0])]
    lines += ["", *_table(SUMMARY_HEAD, [summary_row(result) for result in analysis.profiles])]
    lines += [f"{result.profile.name}: {result.patches}" for result in analysis.profiles if result.patches]
    lines += [f"stack on {result.profile.name}: {result.stack.bytes:,} B counted: {result.stack.parts()}"
              for result in analysis.profiles if result.stack is not None]
    lines += [f"{result.profile.name}: {result.problem}" for result in analysis.profiles if result.problem]
    lines += ["", "activations: every activation buffer's bytes before the arena shares them; total RAM: the arena, "
              "the inputs and outputs outside it, the state and the stack counted (the profile's stack_bound_bytes "
              "for the frames + the largest kernel's stack arrays); flash: the "
              "weights stored (the code needs a build, report.md of a built bundle gives it); est.: "
              + DESCRIPTION + ", times the core's cycles per "
              "instruction (docs/cycle_model.md) at the profile's clock_hz ('-': no cycle table for the core)"]
    return "\n".join(lines) + "\n"
