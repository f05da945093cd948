"""Patch-based execution of a CNN's first stages (MCUNetV2): geometry and the search of cut and grid.

This module says which prefix of a chain of windowed NHWC stages to run patch by patch, over which grid, what
arena that needs (an estimate, to rank plans) and how many MACs it adds; `tvm_ext.transform.patch_prefix` runs
the plan as a graph rewrite, `tvm_ext.compile.patches` chooses it for a compile, and
`scripts/bench_patches.py` prints it for a model.

Geometry. A stage maps its input (H, W) to its output (H', W') through a window `kernel` moved by `stride`,
with `pad` rows and columns of padding before the first input row and column (TFLite's SAME or VALID).
Output rows [a, b) read input rows [a * s - p, (b - 1) * s - p + k), of which only those inside [0, H) exist:
the rest is padding, which lies outside the image only at its true border. So a patch computed from exactly
that clipped receptive field, padded where (and only where) the clip cut at the image border, computes the
values the whole layer computes (`receptive_rows`; `tests/test_patch_geometry.py` checks it against whole
convolutions). A patch of the cut stage's output is traced back stage by stage to the model input
(`patch_regions`).

Cost model (bytes, MACs), as the rewrite runs a plan and the memory planner places it: each patch slices its
input tile out of the model input (a copy in the arena, unless the patch reads the whole input), then each
stage reads its input tile and writes its output tile; a row's pieces of the cut stage's output are
concatenated into a strip of the output, and the strips into the whole output (copies). While a stage runs,
the pieces and strips already computed are live, and its input and output tiles (`streamed_bytes`): the
planner lets a kernel's output take the bytes of the input it reads for the last time, as far as the kernel's
write front stays behind its read front (`memory_planner.api.StreamOrder`, derived from each kernel's loops
by `tvm_ext.codegen.stream_order`). The model takes each window kernel to stream row by row: output row r is
written once the input rows from row r's first (r * stride - pad) on are still unread, the coarsest order
in which our window kernels stream. The rest of the model runs layer by layer, each stage's input and output
streamed alike (the model input outside the arena). The figure is then the liveness lower bound of the plan
the planner gets (person_detect's 2x2 and 2x3 plans: 14,600 and 12,824 B, the planner's bounds to the byte),
which the planned arena exceeds only by what its placement leaves between buffers (216 and 1,000 B there): an
estimate below the truth by that gap, so that no plan that fits is left out; the compile plans every plan
it takes. It stays conservative where a kernel streams finer than by rows (pixel by pixel: vww_96_int8's 2x4
plan, 11,512 B against a bound of 11,376 B), since which kernels do is known only once they are lowered, and
it is below the truth where a kernel does not stream at all (no stream order: its input and output apart).
A stage's MACs per output pixel are its MACs over its output pixels; the extra MACs are those of the pixels
two patches both compute (the halos' overlap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

Range = tuple[int, int]  # [start, stop) rows or columns
Region = tuple[Range, Range]  # rows, columns
Inputs = list[tuple[int, ...]]  # per stage, the stages (0-based) whose outputs it reads, -1 the prefix's input


@dataclass(frozen=True)
class WindowStage:
    """One NHWC stage of a prefix: a convolution, depthwise convolution, pool (a window) or an elementwise
    operator (1x1 window, stride 1). Shapes in elements, `element_bytes` per activation element."""

    name: str
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    in_channels: int
    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    pad: tuple[int, int]  # padding rows before the first row, columns before the first column
    macs: int  # of the whole stage
    element_bytes: int = 1
    # a global average pool, a MEAN or a FULLY_CONNECTED over the flattened input (one output pixel from every
    # input pixel, no padding): summed band by band into 4-byte sums per output channel
    reduces: bool = False

    def out_tile_bytes(self, region: Region) -> int:
        return _area(region) * self.out_channels * self.element_bytes

    def in_tile_bytes(self, region: Region) -> int:
        return _area(region) * self.in_channels * self.element_bytes

    @property
    def macs_per_pixel(self) -> float:
        return self.macs / (self.out_hw[0] * self.out_hw[1])


def same_padding(size: int, out: int, kernel: int, stride: int) -> int:
    """The padding before the first element TFLite's SAME gives (the smaller half of the total)."""
    return max((out - 1) * stride + kernel - size, 0) // 2


def receptive_rows(rows: Range, kernel: int, stride: int, pad: int, size: int) -> Range:
    """The input rows (clipped to the image's [0, size)) that output rows `rows` read."""
    start, stop = rows
    return max(start * stride - pad, 0), min((stop - 1) * stride - pad + kernel, size)


def patch_regions(stages: list[WindowStage], patch: Region) -> list[Region]:
    """The region of each stage's output a patch `patch` of the last stage's output needs, first stage first,
    preceded by the region of the model input: len(stages) + 1 regions."""
    regions = [patch]
    for stage in reversed(stages):
        rows, cols = regions[0]
        regions.insert(0, (receptive_rows(rows, stage.kernel[0], stage.stride[0], stage.pad[0], stage.in_hw[0]),
                           receptive_rows(cols, stage.kernel[1], stage.stride[1], stage.pad[1], stage.in_hw[1])))
    return regions


def split(extent: int, parts: int) -> list[Range]:
    """[0, extent) in `parts` ranges as even as possible, the larger first."""
    base, extra = divmod(extent, parts)
    ranges, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


@dataclass(frozen=True)
class PatchCut:
    """Where and how to run a prefix patch by patch: after window stage `cut` (1-based), over a rows x
    columns `grid` of that stage's output."""

    cut: int
    grid: tuple[int, int]
    driver: int | None = None  # streamed (`stream_rows`, grid n x 1): the stage whose output rows the bands split

    @property
    def streamed(self) -> bool:
        return self.driver is not None


@dataclass(frozen=True)
class PatchPlan:
    """A prefix of `cut` stages run patch by patch over a rows x columns `grid` of the last one's output, or,
    `streamed`, in grid[0] bands of rows whose halos are kept, not recomputed (`stream_cost`)."""

    cut: int
    grid: tuple[int, int]
    arena_bytes: int  # estimated: the prefix's need or the rest's layer-by-layer peak, the larger
    prefix_bytes: int
    extra_macs: int
    total_macs: int  # of the whole model, layer by layer
    driver: int | None = None  # streamed: the stage (0-based) whose output rows the bands split

    @property
    def streamed(self) -> bool:
        return self.driver is not None

    @property
    def extra_macs_fraction(self) -> float:
        return self.extra_macs / self.total_macs if self.total_macs else 0.0


def plan_cost(stages: list[WindowStage], cut: int, grid: tuple[int, int], rest_peak_bytes: int,
              total_macs: int) -> PatchPlan:
    """The cost of running `stages[:cut]` patch by patch over `grid` (see the module's cost model);
    `rest_peak_bytes` is the layer-by-layer peak of what follows the cut, the cut's output included."""
    prefix = stages[:cut]
    last = prefix[-1]
    computed = [0] * cut
    whole_input = ((0, prefix[0].in_hw[0]), (0, prefix[0].in_hw[1]))
    peak = 0
    done = 0  # bytes of the cut output's strips already concatenated
    row_ranges, col_ranges = split(last.out_hw[0], grid[0]), split(last.out_hw[1], grid[1])
    for rows in row_ranges:
        pieces = 0  # bytes of this row's pieces already computed
        for cols in col_ranges:
            regions = patch_regions(prefix, (rows, cols))
            for i, stage in enumerate(prefix):
                computed[i] += _area(regions[i + 1])
                # stage 0 reads the slice of the model input (outside the arena when the patch reads all of it)
                sliced = i > 0 or regions[0] != whole_input
                peak = max(peak, done + pieces + streamed_bytes(stage, regions[i], regions[i + 1], sliced))
            pieces += last.out_tile_bytes((rows, cols))
        if len(col_ranges) > 1:
            peak = max(peak, done + 2 * pieces)  # the row's pieces and their strip
        done += pieces
    if len(row_ranges) > 1:
        peak = max(peak, 2 * done)  # the strips and the whole output
    extra = sum(round((computed[i] - s.out_hw[0] * s.out_hw[1]) * s.macs_per_pixel) for i, s in enumerate(prefix))
    return PatchPlan(cut, grid, max(peak, rest_peak_bytes), peak, extra, total_macs)


def streamed_bytes(stage: WindowStage, region_in: Region, region_out: Region, input_in_arena: bool = True) -> int:
    """The bytes `stage`'s input tile `region_in` (of its input) and output tile `region_out` (of its output)
    take together while it runs, the output written row by row over the input as the input is read for the
    last time (see the module's cost model); the output alone when the input is not in the arena."""
    out_bytes = stage.out_tile_bytes(region_out)
    if not input_in_arena:
        return out_bytes
    (in_start, _), (col_start, col_stop) = region_in
    (out_start, out_stop), (out_col_start, out_col_stop) = region_out
    in_row = (col_stop - col_start) * stage.in_channels * stage.element_bytes
    out_row = (out_col_stop - out_col_start) * stage.out_channels * stage.element_bytes
    # the first input row output row r reads, relative to the tile (the tile starts at the whole layer's
    # first row of out_start, clipped at the image border)
    first_read = [max(r * stage.stride[0] - stage.pad[0], 0) - in_start for r in range(out_start, out_stop)]
    lead = max((k + 1) * out_row - first * in_row for k, first in enumerate(first_read))
    return max(out_bytes, max(lead, 0) + stage.in_tile_bytes(region_in))


def top_stage(stages: list[WindowStage]) -> int:
    """The last stage of a streamed prefix `stages` that computes rows band by band: the last, or the one before
    when the last reduces (a global average pool or a FULLY_CONNECTED, which sums its input band by band)."""
    return len(stages) - 2 if stages[-1].reduces else len(stages) - 1


def stream_rows(stages: list[WindowStage], bands: int, driver: int,
                inputs: Inputs | None = None) -> list[list[Range]]:
    """The output rows [start, stop) each stage computes in each band of a streamed prefix (band by band, then
    stage by stage; empty when a band computes no row of the stage). The output rows of stage `driver` are split
    in `bands`; a stage before it computes the rows of its output that its readers' rows read (pulled), one
    after it (up to `top_stage`) every row whose input rows are all computed (pushed; a join, reading several
    stages, the rows all of them have), so every output row is computed once: no extra MACs. A reducing last
    stage computes its one row in the last band. `inputs`: the stages each stage reads (`graph_inputs`; None: a
    chain). Driven from the first stage in one band per row, each stage holds only the input rows its window
    still needs: line buffering."""
    inputs = graph_inputs(stages, inputs)
    top, count = top_stage(stages), len(stages)
    stops: list[list[int]] = []
    for _, stop in split(stages[driver].out_hw[0], bands):
        needed = [0] * count
        needed[driver] = stop
        for i in reversed(range(driver)):
            for j in range(i + 1, driver + 1):
                after = stages[j]
                if i in inputs[j] and needed[j]:
                    needed[i] = max(needed[i], receptive_rows((0, needed[j]), after.kernel[0], after.stride[0],
                                                              after.pad[0], after.in_hw[0])[1])
        for i in range(driver + 1, top + 1):
            needed[i] = min(_complete_rows(stages[i], stages[i].in_hw[0] if p < 0 else needed[p]) for p in inputs[i])
        if top < count - 1:
            needed[-1] = 1 if all(p >= 0 and needed[p] == stages[p].out_hw[0] for p in inputs[-1]) else 0
        stops.append(needed)
    rows, before = [], [0] * count
    for needed in stops:
        rows.append([(b, max(n, b)) for b, n in zip(before, needed)])
        before = [max(n, b) for b, n in zip(before, needed)]
    return rows


def graph_inputs(stages: list[WindowStage], inputs: Inputs | None) -> Inputs:
    """`inputs`, or those of a chain (each stage reads the one before; the first, the prefix's input)."""
    return [(i - 1,) for i in range(len(stages))] if inputs is None else inputs


def readers_of(inputs: Inputs, count: int) -> list[list[int]]:
    """For each of `count` stages, the stages that read its output, in order."""
    return [[j for j, ins in enumerate(inputs) if i in ins] for i in range(count)]


def valid_cuts(inputs: Inputs, count: int) -> list[int]:
    """The cuts c (1.. `count`) after which only stage c's output is read by later stages: where a prefix of a
    graph of stages ends in one value."""
    return [c for c in range(1, count + 1)
            if all(p in (-1, c - 1) or p >= c for ins in inputs[c:] for p in ins)]


def _complete_rows(stage: WindowStage, available: int) -> int:
    """How many of `stage`'s output rows read only its input rows [0, `available`) (all once it has them all)."""
    if available >= stage.in_hw[0]:
        return stage.out_hw[0]
    return max(0, min(stage.out_hw[0], (available + stage.pad[0] - stage.kernel[0]) // stage.stride[0] + 1))


def stream_cost(stages: list[WindowStage], cut: int, bands: int, driver: int, rest_peak_bytes: int,
                total_macs: int, inputs: Inputs | None = None) -> PatchPlan:
    """The cost of running `stages[:cut]` streamed in `bands` bands of stage `driver`'s output rows
    (`stream_rows`; `inputs` as there), as the rewrite runs it and the planner places it: each stage after the
    first keeps the chunks of its input rows (the new rows of a stage it reads, band by band) that a later band
    still reads; when it computes rows, their input tile (the clipped receptive field) is joined from those
    chunks (a copy) and its output rows streamed over it (a join, reading several stages, holds a tile of each).
    Live meanwhile: every kept chunk (once, however many stages keep it), and the delivered rows already
    computed (the cut output's, concatenated at the end) or, for a reducing cut, the running sums (4 bytes a
    channel, old and new while a band adds to them). A chunk only partly read again is cut to those rows (a
    copy). No extra MACs."""
    prefix = stages[:cut]
    inputs = graph_inputs(prefix, None if inputs is None else inputs[:cut])
    readers = readers_of(inputs, cut)
    schedule = stream_rows(prefix, bands, driver, inputs)
    # each stage's kept chunks of each stage it reads: (the stage read, its rows), bytes
    kept: dict[tuple[int, int], list[tuple[tuple[int, Range], int]]] = {
        (i, p): [] for i, ins in enumerate(inputs) for p in ins if p >= 0}

    def live() -> int:
        return sum(dict(chunk for chunks in kept.values() for chunk in chunks).values())

    whole_input = (0, prefix[0].in_hw[0])
    done = peak = 0
    for k, rows in enumerate(schedule):
        for i, (stage, out_rows) in enumerate(zip(prefix, rows)):
            mine = [p for p in inputs[i] if p >= 0]
            if stage.reduces:
                if any(kept[(i, p)] for p in mine):
                    sums = 4 * stage.out_channels
                    peak = max(peak, done + live() + (2 * sums if done else sums))
                    done = sums
                    for p in mine:
                        kept[(i, p)] = []
                continue
            if out_rows[0] == out_rows[1]:
                continue
            width = ((0, stage.in_hw[1]), (0, stage.out_hw[1]))
            in_rows = receptive_rows(out_rows, stage.kernel[0], stage.stride[0], stage.pad[0], stage.in_hw[0])
            region_in, region_out = (in_rows, width[0]), (out_rows, width[1])
            tile = stage.in_tile_bytes(region_in)
            if mine:
                peak = max(peak, done + live() + tile * len(mine))  # the joins
            following = next((later[i] for later in schedule[k + 1:] if later[i][0] < later[i][1]), None)
            start = stage.in_hw[0] if following is None else receptive_rows(
                following, stage.kernel[0], stage.stride[0], stage.pad[0], stage.in_hw[0])[0]
            for p in mine:  # a chunk partly read again: those rows sliced
                kept[(i, p)] = [((p, (max(r[0], start), r[1])), b * (r[1] - max(r[0], start)) // (r[1] - r[0]))
                                for (_, r), b in kept[(i, p)] if r[1] > start]
            first_in_arena = inputs[i][0] >= 0 or in_rows != whole_input
            peak = max(peak, done + live() + tile * (len(inputs[i]) - 1)
                       + streamed_bytes(stage, region_in, region_out, first_in_arena))
            fresh = ((i, out_rows), stage.out_tile_bytes(region_out))
            for j in readers[i]:
                kept[(j, i)].append(fresh)
            if i == cut - 1:
                done += fresh[1]
    if not prefix[-1].reduces and bands > 1:
        peak = max(peak, 2 * done)  # the bands' rows and their concatenation
    return PatchPlan(cut, (bands, 1), max(peak, rest_peak_bytes), peak, 0, total_macs, driver)


MAX_BANDS = 32  # bands a streamed plan `stream_search` considers at most: each band's calls are code of their own


def stream_search(stages: list[WindowStage], rest_peak_bytes: Callable[[int], int], total_macs: int,
                  cuts: Sequence[int], max_bands: int = MAX_BANDS, inputs: Inputs | None = None) -> list[PatchPlan]:
    """Every streamed plan of a cut in `cuts` after stage 2.. len(stages) driven from its first stage or its
    `top_stage`, in 2.. `max_bands` bands (at most one band per row of the driving stage's output), by arena
    estimate, then fewer bands; `inputs` as stream_rows'. `cuts` are the stages after which the model's graph ends
    in one value (`tvm_ext.transform.patch_prefix.WindowChain.cuts`): no later stage reads another value of the
    prefix (`valid_cuts`), nor does an operator outside the stages (a U-Net's skip concatenation after a transpose
    convolution), which the stages alone do not show."""
    plans = []
    for cut in cuts:
        if cut < 2:
            continue
        for driver in sorted({0, top_stage(stages[:cut])}):
            for bands in range(2, min(max_bands, stages[driver].out_hw[0]) + 1):
                plans.append(stream_cost(stages, cut, bands, driver, rest_peak_bytes(cut), total_macs, inputs))
    return sorted(plans, key=lambda p: (p.arena_bytes, p.grid[0], -p.driver))


def search(stages: list[WindowStage], rest_peak_bytes: Callable[[int], int], total_macs: int,
           max_grid: int = 8) -> list[PatchPlan]:
    """Every plan of a cut after stage 2.. len(stages) and a grid up to `max_grid` x `max_grid` (not 1 x 1),
    sorted by arena, then extra MACs; `rest_peak_bytes(cut)` as plan_cost's."""
    plans = []
    for cut in range(2, len(stages) + 1):
        out_h, out_w = stages[cut - 1].out_hw
        for rows in range(1, min(max_grid, out_h) + 1):
            for cols in range(1, min(max_grid, out_w) + 1):
                if rows * cols > 1:
                    plans.append(plan_cost(stages, cut, (rows, cols), rest_peak_bytes(cut), total_macs))
    return sorted(plans, key=lambda p: (p.arena_bytes, p.extra_macs))


def layer_by_layer_peak(stages: list[WindowStage], first: int, inputs: Inputs | None = None) -> int:
    """The cost model's peak of stages[first:] layer by layer: each stage's whole input and output, streamed
    (`streamed_bytes`; the model input, read by stage 0, outside the arena), beside the whole outputs of the
    stages before it that a stage after it still reads (a skip branch; `inputs` as stream_rows')."""
    inputs = graph_inputs(stages, inputs)
    readers = readers_of(inputs, len(stages))
    peak = 0
    for i, s in enumerate(stages):
        if i >= first:
            held = sum(_whole_bytes(stages[p]) for p in range(i) if p not in inputs[i] and any(j > i for j in readers[p]))
            others = sum(_whole_bytes(stages[p]) for p in inputs[i][1:] if p >= 0)
            peak = max(peak, held + others + streamed_bytes(s, _whole(s.in_hw), _whole(s.out_hw), inputs[i][0] >= 0))
    return peak


def _whole_bytes(stage: WindowStage) -> int:
    return stage.out_tile_bytes(_whole(stage.out_hw))


def best_within(plans: list[PatchPlan], max_extra_fraction: float) -> PatchPlan | None:
    """The plan of smallest arena (then fewest extra MACs) whose extra MACs are at most `max_extra_fraction`
    of the model's."""
    return next((p for p in plans if p.extra_macs_fraction <= max_extra_fraction), None)


def _whole(hw: tuple[int, int]) -> Region:
    return (0, hw[0]), (0, hw[1])


def _area(region: Region) -> int:
    (r0, r1), (c0, c1) = region
    return max(r1 - r0, 0) * max(c1 - c0, 0)
