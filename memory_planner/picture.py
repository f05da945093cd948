"""A picture of a memory plan as plain SVG text (no dependency): step on x, offset on y. The bundle's
memory_plan.svg and the memory plan in its report.html are this one drawing. A profile of several RAM regions
(memory_planner.regions) gives one arena per region: `regions_plan_svg` draws each as a lane of its own, fastest
first, on one step axis.

Each buffer is a rectangle from its first to its last step and from its offset to its end (offset 0 at the
bottom), labelled with the shortest tail of `Buffer.label` (the layer; else its name) that tells the buffers' labels
apart (so `net/net/conv1/Relu` and `net/net/conv2/Relu` read `conv1/Relu` and `conv2/Relu`, not both `net/n...`),
and saying so when it sits in place of another; its <title> (the tooltip on hover) gives its name,
bytes, offset, steps and full label. A label is drawn only in a rectangle tall enough to hold it, and clipped to
its rectangle. Rectangles are drawn in the buffers' order, opaque: a buffer written in place of another
covers the bytes the two share at their hand-over step (its label says whose bytes it takes).

The byte axis is linear except that every interval between two buffer edges is at least MIN_GAP_PX tall:
a 16-byte scratch buffer under a 100 kB activation is still a visible rectangle, never drawn over its
neighbours (the scale is monotonic, so buffers apart in bytes are apart in the picture). The y axis has
ticks at round byte counts, placed on that same scale (the spacing of two ticks therefore shows where the
scale was stretched); a dashed line marks the lower bound (labelled at the right) and a solid one the
arena's top (labelled at the left), so the gap between them is the bytes the plan loses.

Labels and titles come from the model's names: each is `printable.markup_text` (printable, then escaped), so
the document is well-formed XML and literal HTML for any name.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.regions import RegionArena
from printable import markup_text

PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd")
PLOT_WIDTH, PLOT_HEIGHT = 900, 480  # pixels (the plot grows taller when its buffers need it: ByteScale)
MARGIN_LEFT, MARGIN_TOP, MARGIN_BOTTOM = 110, 40, 50  # pixels
MIN_GAP_PX = 3.0
"""The least height (pixels) of the interval between two buffer edges: of the smallest buffer."""
LABEL_MIN_PX = 12.0
"""A rectangle lower than this (pixels) has no label drawn (its tooltip still names it)."""
TICK_MIN_PX = 14.0
"""The least distance (pixels) between two labelled ticks of the byte axis."""
STEP_FONT_PX = 9
"""The step axis' labels' font size (pixels)."""
DIGIT_WIDTH_EM = 0.65
"""A digit's width in font sizes, at the most (sans-serif digits are 0.55 to 0.65 em wide)."""
STEP_LABEL_GAP_PX = 4.0
"""The least space (pixels) between two labels of the step axis."""
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


class ByteScale:
    """Offsets (bytes) to y pixels: piecewise linear between the distinct buffer edges `edges` (at least two),
    each interval `max(its bytes x k, MIN_GAP_PX)` tall with the one k that makes them `height` pixels
    together: PLOT_HEIGHT, or twice MIN_GAP_PX per interval when that is more. Offset 0 is at `bottom`,
    MARGIN_TOP + `height`."""

    def __init__(self, edges: Sequence[int]) -> None:
        self.edges = sorted(set(edges))
        gaps = [b - a for a, b in zip(self.edges, self.edges[1:])]
        self.height = max(float(PLOT_HEIGHT), MIN_GAP_PX * len(gaps) * 2)
        self.bottom = MARGIN_TOP + self.height
        # Water-filling: the smallest gaps take MIN_GAP_PX, the rest share the height left in proportion.
        ordered = sorted(gaps)
        k = 0.0
        for small in range(len(ordered)):
            k = (self.height - MIN_GAP_PX * small) / sum(ordered[small:])
            if ordered[small] * k >= MIN_GAP_PX:
                break
        heights = [max(gap * k, MIN_GAP_PX) for gap in gaps]
        self.pixels = [0.0]
        for h in heights:
            self.pixels.append(self.pixels[-1] + h)

    def y(self, offset: int) -> float:
        """The y pixel of `offset` (bytes); offsets beyond the last edge continue its last interval's slope."""
        i = min(max(bisect.bisect_right(self.edges, offset) - 1, 0), len(self.edges) - 2)
        a, b = self.edges[i], self.edges[i + 1]
        pixel = self.pixels[i] + (offset - a) * (self.pixels[i + 1] - self.pixels[i]) / (b - a)
        return self.bottom - pixel


def memory_plan_svg(buffers: Sequence[Buffer], plan: MemoryPlan, standalone: bool = True) -> str:
    """The SVG drawing `plan` for `buffers`: a document (`standalone`: with its namespace, for memory_plan.svg)
    or an element to put inside an HTML page (report.html), the same drawing."""
    width, height, parts = _drawing(buffers, plan, "", max((b.last_step for b in buffers), default=0) + 1)
    return "\n".join([_svg_open(width, height, standalone), *parts, "</svg>"]) + "\n"


def regions_plan_svg(arenas: Sequence[RegionArena], standalone: bool = True) -> str:
    """One drawing of every RAM region's arena (memory_planner.regions; fastest first), a lane each from top to
    bottom: each lane is `memory_plan_svg`'s drawing of its region's plan, captioned with the region's name and
    bytes, every lane on the same step axis (the steps of all the regions' buffers). A document (`standalone`)
    or an element for an HTML page, as memory_plan_svg."""
    steps = max((b.last_step for arena in arenas for b in arena.buffers), default=0) + 1
    lanes, top = [], 0.0
    for arena in arenas:
        room = "the rest of the SRAM" if arena.capacity_bytes is None else f"{arena.capacity_bytes:,} B"
        width, height, parts = _drawing(list(arena.buffers), arena.memory, f"region {arena.region} ({room}): ", steps)
        lanes += [f'<svg y="{top:.0f}" width="{width}" height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" '
                  f'class="region" aria-label="region {markup_text(arena.region)}">', *parts, "</svg>"]
        top += round(height)
    width = MARGIN_LEFT + PLOT_WIDTH + 20
    return "\n".join([_svg_open(width, top, standalone), *lanes, "</svg>"]) + "\n"


def arenas_svg(buffers: Sequence[Buffer], plan: MemoryPlan, arenas: Sequence[RegionArena] = (),
               standalone: bool = True) -> str:
    """A bundle's memory plan drawn: every region's arena (`regions_plan_svg`) when `arenas` lists several RAM
    regions, else the one arena `plan` of `buffers` (`memory_plan_svg`)."""
    return regions_plan_svg(arenas, standalone) if len(arenas) > 1 else memory_plan_svg(buffers, plan, standalone)


def _svg_open(width: int, height: float, standalone: bool) -> str:
    """The opening tag of a drawing `width` x `height` pixels (with its namespace when `standalone`)."""
    namespace = f' xmlns="{SVG_NAMESPACE}"' if standalone else ""
    return (f'<svg{namespace} width="{width}" height="{height:.0f}" viewBox="0 0 {width} {height:.0f}" '
            'role="img" aria-label="memory plan">')


def _drawing(buffers: Sequence[Buffer], plan: MemoryPlan, caption: str, steps: int) -> tuple[int, float, list[str]]:
    """The drawing of `plan` for `buffers` over `steps` steps, its title line after `caption`: its width and
    height (pixels) and its elements (memory_plan_svg's, without the enclosing <svg>)."""
    top = max(plan.arena_bytes, plan.lower_bound, 1)
    edges = {0, top, plan.lower_bound}
    for b in buffers:
        edges |= {plan.offsets[b.name], plan.offsets[b.name] + b.nbytes}
    scale = ByteScale(sorted(edges))
    bottom = scale.bottom
    step_px = PLOT_WIDTH / steps
    labels = short_labels([b.label or b.name for b in buffers])

    width, height = MARGIN_LEFT + PLOT_WIDTH + 20, bottom + MARGIN_BOTTOM
    parts = [
        f'<rect x="0" y="0" width="{width}" height="{height:.0f}" fill="white"/>',
        _text(MARGIN_LEFT, 20, f"{caption}arena {plan.arena_bytes:,} B, lower bound {plan.lower_bound:,} B, "
              f"strategy {plan.strategy}{', optimal' if plan.optimal else ''}; hover a buffer for its name", 13),
    ]
    parts += _byte_ticks(scale, top)
    for i, (b, label) in enumerate(zip(buffers, labels)):
        offset = plan.offsets[b.name]
        x, y0, y1 = MARGIN_LEFT + b.first_step * step_px, scale.y(offset + b.nbytes), scale.y(offset)
        w, h = (b.last_step - b.first_step + 1) * step_px, y1 - y0
        shares = b.inplace_of is not None and plan.offsets.get(b.inplace_of) == offset
        label += f" (in place of {b.inplace_of})" if shares else ""
        title = (f"{b.name}: {b.nbytes:,} B at offset {offset:,}, steps {b.first_step}..{b.last_step}"
                 + (f"; {b.label}" if b.label else ""))
        text = (f'<svg x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}">'  # clips the label
                + _text(3, h / 2 + 4, label, 10) + "</svg>") if h >= LABEL_MIN_PX else ""
        parts.append(
            f'<g class="buffer"><title>{markup_text(title)}</title>'
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[i % len(PALETTE)]}" stroke="#333" stroke-width="0.8"/>'
            f"{text}</g>"
        )
    right = MARGIN_LEFT + PLOT_WIDTH
    bound_y, arena_y = scale.y(plan.lower_bound), scale.y(plan.arena_bytes)
    parts += [
        f'<line x1="{MARGIN_LEFT}" y1="{arena_y:.1f}" x2="{right}" y2="{arena_y:.1f}" stroke="#c00"/>',
        _text(right - 4, arena_y - 4, f"arena {plan.arena_bytes:,}", 11, "end", ' fill="#c00"'),
        f'<line x1="{MARGIN_LEFT}" y1="{bound_y:.1f}" x2="{right}" y2="{bound_y:.1f}" stroke="#00c" '
        'stroke-width="1.5" stroke-dasharray="6 4"/>',
        _text(right - 4, bound_y + 14, f"lower bound {plan.lower_bound:,}", 11, "end", ' fill="#00c"'),
        f'<line x1="{MARGIN_LEFT}" y1="{bottom:.1f}" x2="{right}" y2="{bottom:.1f}" stroke="black"/>',
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP}" x2="{MARGIN_LEFT}" y2="{bottom:.1f}" stroke="black"/>',
        *(_text(MARGIN_LEFT + (s + 0.5) * step_px, bottom + 14, str(s), STEP_FONT_PX, "middle")
          for s in range(0, steps, step_label_stride(steps))),
        _text(MARGIN_LEFT + PLOT_WIDTH / 2, bottom + 36, "step (kernel call)", 12, "middle"),
        _text(16, (MARGIN_TOP + bottom) / 2, "offset (bytes)", 12, "middle",
              f' transform="rotate(-90 16 {(MARGIN_TOP + bottom) / 2:.1f})"'),
    ]
    return width, height, parts


def short_labels(labels: Sequence[str]) -> list[str]:
    """Each label's shortest tail of `/`-separated parts that still tells every two different labels apart
    (the same number of parts for all; whole labels when only they differ)."""
    parts = {label: label.split("/") for label in set(labels)}
    for count in range(1, max((len(p) for p in parts.values()), default=0) + 1):
        tails = {label: "/".join(p[-count:]) for label, p in parts.items()}
        if len(set(tails.values())) == len(parts):
            return [tails[label] for label in labels]
    return list(labels)


def byte_tick_step(top: int) -> int:
    """A round step (1, 2 or 5 x a power of ten bytes) giving at most ten ticks above 0 up to `top` bytes."""
    step = 1
    while top / step > 10:
        step = _next_round(step)
    return step


def step_label_stride(steps: int) -> int:
    """Every how many steps the step axis of `steps` steps is labelled: the least round stride (1, 2 or 5 x a
    power of ten) that sets the labels apart by the widest one's width and STEP_LABEL_GAP_PX."""
    widest = len(str(steps - 1)) * DIGIT_WIDTH_EM * STEP_FONT_PX + STEP_LABEL_GAP_PX
    stride = 1
    while stride * PLOT_WIDTH / steps < widest:
        stride = _next_round(stride)
    return stride


def _next_round(step: int) -> int:
    """The round step after `step`: 1, 2, 5, 10, 20, 50, ..."""
    digits = 10 ** (len(str(step)) - 1)
    lead = step // digits
    return {1: 2, 2: 5, 5: 10}[lead] * digits


def _byte_ticks(scale: ByteScale, top: int) -> list[str]:
    """The byte axis' ticks (round byte counts up to `top`) with grid lines, a tick's label left out when it
    would sit within TICK_MIN_PX of the one below it."""
    parts, last_y = [], None
    for offset in range(0, top + 1, byte_tick_step(top)):
        y = scale.y(offset)
        parts.append(f'<line x1="{MARGIN_LEFT - 4}" y1="{y:.1f}" x2="{MARGIN_LEFT + PLOT_WIDTH}" y2="{y:.1f}" '
                     'stroke="#ddd" stroke-width="0.6"/>')
        if last_y is None or last_y - y >= TICK_MIN_PX:
            parts.append(_text(MARGIN_LEFT - 6, y + 4, f"{offset:,}", 10, "end"))
            last_y = y
    return parts


def _text(x: float, y: float, text: str, size: int = 11, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
        f'font-family="sans-serif"{extra}>{markup_text(text)}</text>'
    )
