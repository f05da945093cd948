"""A picture of a memory plan as plain SVG text (no dependency): step on x, offset on y.

Each buffer is a rectangle from its first to its last step and from its offset to its end, labelled
with `Buffer.label` (the layer) or its name, and says so when it sits in place of another; offset 0 is
at the bottom. A dashed line marks the lower bound (labelled at the right) and a solid one the arena's
top (labelled at the left), so the gap between them is the bytes the plan loses.

Labels and titles come from the model's names: each is made `printable` (XML 1.0 admits no control
character, not even as a reference, nor a lone surrogate), then XML-escaped, so the document is well-formed
XML for any name.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from memory_planner.api import Buffer, MemoryPlan
from printable import printable

PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd")
PLOT_WIDTH, PLOT_HEIGHT = 900, 480  # pixels
MARGIN_LEFT, MARGIN_TOP, MARGIN_BOTTOM = 110, 40, 50  # pixels


def _xml_text(text: str) -> str:
    """`text` as the character data of an XML element: printable, then &, < and > escaped."""
    return escape(printable(text))


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif"{extra}>{_xml_text(text)}</text>'
    )


def memory_plan_svg(buffers: Sequence[Buffer], plan: MemoryPlan) -> str:
    """The SVG document (text) drawing `plan` for `buffers`."""
    steps = max((b.last_step for b in buffers), default=0) + 1
    top = max(plan.arena_bytes, plan.lower_bound, 1)
    step_px = PLOT_WIDTH / steps
    byte_px = PLOT_HEIGHT / top
    bottom = MARGIN_TOP + PLOT_HEIGHT

    def y_of(offset: int) -> float:
        return bottom - offset * byte_px

    width, height = MARGIN_LEFT + PLOT_WIDTH + 20, bottom + MARGIN_BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
        _text(MARGIN_LEFT, 20, f"arena {plan.arena_bytes} B, lower bound {plan.lower_bound} B, "
              f"strategy {plan.strategy}{', optimal' if plan.optimal else ''}", 13),
    ]
    for i, b in enumerate(buffers):
        offset = plan.offsets[b.name]
        x, y0, y1 = MARGIN_LEFT + b.first_step * step_px, y_of(offset + b.nbytes), y_of(offset)
        w = (b.last_step - b.first_step + 1) * step_px
        shares = b.inplace_of is not None and plan.offsets.get(b.inplace_of) == offset
        label = (b.label or b.name) + (f" (in place of {b.inplace_of})" if shares else "")
        title = f"{b.name}: {b.nbytes} B at {offset}, steps {b.first_step}..{b.last_step}"
        parts.append(
            f'<g><title>{_xml_text(title)}</title>'
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{y1 - y0:.1f}" '
            f'fill="{PALETTE[i % len(PALETTE)]}" stroke="#333" stroke-width="0.8"/>'
            f'<svg x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{y1 - y0:.1f}">'  # clips the label
            + _text(3, (y1 - y0) / 2 + 4, label, 10)
            + "</svg></g>"
        )
    right = MARGIN_LEFT + PLOT_WIDTH
    bound_y, arena_y = y_of(plan.lower_bound), y_of(plan.arena_bytes)
    parts += [
        f'<line x1="{MARGIN_LEFT}" y1="{arena_y:.1f}" x2="{right}" y2="{arena_y:.1f}" stroke="#c00"/>',
        _text(MARGIN_LEFT - 4, arena_y + 4, f"arena {plan.arena_bytes}", 10, "end"),
        f'<line x1="{MARGIN_LEFT}" y1="{bound_y:.1f}" x2="{right}" y2="{bound_y:.1f}" stroke="#00c" '
        'stroke-width="1.5" stroke-dasharray="6 4"/>',
        _text(right - 4, bound_y + 14, f"lower bound {plan.lower_bound}", 11, "end", ' fill="#00c"'),
    ]
    parts += [
        f'<line x1="{MARGIN_LEFT}" y1="{bottom}" x2="{MARGIN_LEFT + PLOT_WIDTH}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP}" x2="{MARGIN_LEFT}" y2="{bottom}" stroke="black"/>',
        _text(MARGIN_LEFT - 4, bottom + 4, "0", 10, "end"),
        *(_text(MARGIN_LEFT + (s + 0.5) * step_px, bottom + 14, str(s), 9, "middle") for s in range(steps)),
        _text(MARGIN_LEFT + PLOT_WIDTH / 2, bottom + 36, "step (kernel call)", 12, "middle"),
        _text(16, MARGIN_TOP + PLOT_HEIGHT / 2, "offset (bytes)", 12, "middle",
              f' transform="rotate(-90 16 {MARGIN_TOP + PLOT_HEIGHT / 2:.1f})"'),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"
