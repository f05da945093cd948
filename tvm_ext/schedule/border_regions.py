"""The border of a padded convolution cut, at compile time, into rectangles of output pixels that read the
same taps of the image (``tvm_ext.schedule.border_split`` generates one loop nest per rectangle).

A tap test conjunct such as ``1 <= y + ry`` relates one pixel loop (``y``) to one tap loop (``ry``). For each
value of the pixel loop, the tap values where every conjunct on that tap loop holds form a range [lo, hi):
the taps inside the image. Consecutive pixel values with the same ranges form a ``Segment``; a rectangle of
the border is one segment per pixel loop, and every pixel in it reads the same box of taps from the image
and the same taps (the rest of the window) as padding: no test per tap or per pixel is left at run time.
Evaluation is over the loops' constant extents (``tvm_ext.tir.index_expr``); any other form is KeyError.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional

from tvm import tirx

from tvm_ext.tir.index_expr import evaluate_index

COMPARISONS = {tirx.LT: operator.lt, tirx.LE: operator.le, tirx.GT: operator.gt, tirx.GE: operator.ge}

TapRange = tuple[int, int]
"""[lo, hi) of a tap loop's values."""


def holds(comparison, values: dict) -> bool:
    """Whether ``comparison`` (a < b, <=, >, >= over index expressions) holds with the variables ``values``."""
    return COMPARISONS[type(comparison)](evaluate_index(comparison.a, values), evaluate_index(comparison.b, values))


@dataclass(frozen=True)
class Segment:
    """Pixel values [first, end) of one pixel loop whose taps inside the image are ``taps`` (one range per
    tap loop the pixel loop's conjuncts read, in the order given to ``pixel_segments``)."""

    first: int
    end: int
    taps: tuple[TapRange, ...]


def loop_range(loop: tirx.For) -> range:
    """The values of ``loop`` (constant bounds)."""
    return range(int(loop.min), int(loop.min) + int(loop.extent))


def pixel_segments(pixel_loop: tirx.For, tap_conjuncts: list[tuple[tirx.For, list]]) -> Optional[list[Segment]]:
    """The segments of ``pixel_loop``, given each of its tap loops with the conjuncts relating the two; None
    where, for some pixel, a tap loop's inside values are empty or not one range."""
    segments: list[Segment] = []
    for value in loop_range(pixel_loop):
        taps = []
        for tap_loop, conjuncts in tap_conjuncts:
            inside = [t for t in loop_range(tap_loop)
                      if all(holds(c, {pixel_loop.loop_var: value, tap_loop.loop_var: t}) for c in conjuncts)]
            if not inside or inside[-1] - inside[0] + 1 != len(inside):
                return None
            taps.append((inside[0], inside[-1] + 1))
        if segments and segments[-1].taps == tuple(taps):
            segments[-1] = Segment(segments[-1].first, value + 1, segments[-1].taps)
        else:
            segments.append(Segment(value, value + 1, tuple(taps)))
    return segments


def outside_boxes(box: list[TapRange], window: list[TapRange]) -> list[list[TapRange]]:
    """Disjoint boxes covering ``window`` minus ``box`` (each a range per dimension): for each dimension d,
    the part below and the part above ``box`` in d, inside ``box`` in the dimensions before d and anywhere in
    the window in those after."""
    boxes = []
    for d, ((lo, hi), (first, end)) in enumerate(zip(box, window)):
        for side in ((first, lo), (hi, end)):
            if side[0] < side[1]:
                boxes.append([*box[:d], side, *window[d + 1:]])
    return boxes
