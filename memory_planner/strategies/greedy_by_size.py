"""TFLite Micro's greedy-by-size planner, kept as the baseline.

Facts from tensorflow/tflite-micro `memory_planner/greedy_memory_planner.cc`: buffers are sorted by size,
largest first (a stable sort, so equal sizes keep the order they were added in); each is placed in the
first gap, walking the placed buffers that are live at one of its steps in offset order, that holds it,
else above them all. TFLM says it is not guaranteed optimal. TFLM aligns sizes rather than offsets; here
each offset is rounded up to the buffer's own alignment, which is the same rule for 16-byte sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_planner.api import Buffer
from memory_planner.strategies.placement import Placement, first_fit, place_in_order


def place(buffers: Sequence[Buffer]) -> Placement:
    """Place the largest buffer first, each at the first gap that holds it."""
    order = sorted(range(len(buffers)), key=lambda i: -buffers[i].nbytes)
    return Placement(place_in_order(buffers, order, first_fit))
