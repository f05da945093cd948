"""Patch geometry (tvm_ext.patch_geometry): every patch computed from its clipped receptive field, padded
only at the true image border, equals the whole layers' values (checked with integer convolutions and max
pools in numpy, any grid); and the cost model's bytes and extra MACs on a chain worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_ext.patch_geometry import (WindowStage, best_within, layer_by_layer_peak, patch_regions, plan_cost,
                                    receptive_rows, same_padding, search, split, stream_cost, stream_rows,
                                    streamed_bytes, top_stage, valid_cuts)

PAD_VALUE = -7  # an input zero point: what padding holds


def window_op(x: np.ndarray, stage: WindowStage, weights: np.ndarray | None, pads: tuple[int, int, int, int]):
    """Integer convolution (weights [kh, kw, cin, cout]) or max pool (None) of HWC `x` with explicit padding
    (top, bottom, left, right) of PAD_VALUE, no output beyond the padded input."""
    top, bottom, left, right = pads
    padded = np.pad(x, ((top, bottom), (left, right), (0, 0)), constant_values=PAD_VALUE)
    (kh, kw), (sh, sw) = stage.kernel, stage.stride
    out_h, out_w = (padded.shape[0] - kh) // sh + 1, (padded.shape[1] - kw) // sw + 1
    out = []
    for r in range(out_h):
        row = []
        for c in range(out_w):
            window = padded[r * sh:r * sh + kh, c * sw:c * sw + kw, :]
            row.append(window.max(axis=(0, 1)) if weights is None else np.einsum("hwi,hwio->o", window, weights))
        out.append(row)
    return np.array(out, dtype=np.int64)


def chain() -> list[WindowStage]:
    """96 -> conv 3x3 s2 -> 48 -> depthwise-like max pool 3x3 s1 -> 48 -> conv 1x1 -> 48 -> conv 3x3 s2 -> 24
    (scaled down to 22 px to keep numpy fast: 22 -> 11 -> 11 -> 11 -> 6)."""
    stages, size, channels = [], 22, 2
    for name, k, s, cout in (("conv3s2", 3, 2, 3), ("pool3", 3, 1, 3), ("conv1", 1, 1, 4), ("conv3s2b", 3, 2, 2)):
        out = -(-size // s)
        pad = same_padding(size, out, k, s)
        stages.append(WindowStage(name, (size, size), (out, out), channels, cout, (k, k), (s, s), (pad, pad),
                                  out * out * k * k * channels * cout))
        size, channels = out, cout
    return stages


def run(stages, weights, x, region_in=None, regions=None):
    """The chain on `x`; with `regions` (patch_regions) on the clipped input crop, padded only where a
    region touches the image border."""
    for i, stage in enumerate(stages):
        (kh, kw), (sh, sw), (pt, pl) = stage.kernel, stage.stride, stage.pad
        H, W = stage.in_hw
        if regions is None:
            out_h, out_w = stage.out_hw
            pads = (pt, (out_h - 1) * sh + kh - H - pt, pl, (out_w - 1) * sw + kw - W - pl)
        else:
            (r0, r1), (c0, c1) = regions[i + 1]
            (ir0, ir1), (ic0, ic1) = regions[i]
            pads = (ir0 - (r0 * sh - pt), (r1 - 1) * sh - pt + kh - ir1,
                    ic0 - (c0 * sw - pl), (c1 - 1) * sw - pl + kw - ic1)
            assert min(pads) >= 0
            # padding only at the true border
            assert (pads[0] == 0 or ir0 == 0) and (pads[1] == 0 or ir1 == H)
            assert (pads[2] == 0 or ic0 == 0) and (pads[3] == 0 or ic1 == W)
        x = window_op(x, stage, None if stage.name.startswith("pool") else weights[i], pads)
    return x


@pytest.mark.parametrize("grid", [(1, 2), (2, 2), (3, 2), (2, 3), (6, 6), (4, 1)])
def test_every_patch_computes_what_the_whole_layers_compute(grid):
    rng = np.random.default_rng(0)
    stages = chain()
    weights = [rng.integers(-5, 6, size=(*s.kernel, s.in_channels, s.out_channels)) for s in stages]
    image = rng.integers(-128, 128, size=(*stages[0].in_hw, stages[0].in_channels))
    whole = run(stages, weights, image)
    assert whole.shape[:2] == stages[-1].out_hw
    patched = np.full_like(whole, 12345)
    for rows in split(whole.shape[0], grid[0]):
        for cols in split(whole.shape[1], grid[1]):
            regions = patch_regions(stages, (rows, cols))
            (ir0, ir1), (ic0, ic1) = regions[0]
            patch = run(stages, weights, image[ir0:ir1, ic0:ic1], regions=regions)
            patched[rows[0]:rows[1], cols[0]:cols[1]] = patch
    np.testing.assert_array_equal(patched, whole)


def test_receptive_rows_clip_at_the_border_only():
    assert receptive_rows((0, 2), 3, 2, 1, 8) == (0, 4)  # rows -1..3: row -1 is padding
    assert receptive_rows((2, 4), 3, 2, 1, 8) == (3, 8)  # rows 3..7: all inside
    assert receptive_rows((3, 4), 3, 2, 1, 8) == (5, 8)  # rows 5..7, row 8 would be padding
    assert split(10, 3) == [(0, 4), (4, 7), (7, 10)]


def test_cost_of_a_chain_worked_out_by_hand():
    # 8x8x1 -> conv 3x3 s1 (pad 1) -> 8x8x4 -> conv 1x1 -> 8x8x2, one MAC per tap and channel pair
    first = WindowStage("a", (8, 8), (8, 8), 1, 4, (3, 3), (1, 1), (1, 1), 64 * 9 * 4)
    second = WindowStage("b", (8, 8), (8, 8), 4, 2, (1, 1), (1, 1), (0, 0), 64 * 4 * 2)
    plan = plan_cost([first, second], 2, (2, 1), rest_peak_bytes=100, total_macs=10_000)
    # Patch 0 (rows 0..3): a reads input rows 0..4 (a 40 B slice) and writes 4x8x4 (128 B), row r after input
    # row r - 1 on is still unread: its output must start 112 B below its input, 152 B together; b reads that
    # tile (128 B, rows of 32 B) and writes its 4x8x2 piece (64 B, rows of 16 B) 16 B below it: 144 B.
    assert streamed_bytes(first, ((0, 5), (0, 8)), ((0, 4), (0, 8))) == 112 + 40
    assert streamed_bytes(second, ((0, 4), (0, 8)), ((0, 4), (0, 8))) == 16 + 128
    # Patch 1 (rows 4..7) beside patch 0's 64 B piece: a reads input rows 3..7 (row 3 for its first row), 144 +
    # 64 B; b 144 + 64 B. Then the two pieces (128 B) are concatenated into the 8x8x2 cut output: 256 B.
    assert (plan.prefix_bytes, plan.arena_bytes) == (256, 256)
    assert plan_cost([first, second], 2, (2, 1), rest_peak_bytes=300, total_macs=10_000).arena_bytes == 300
    # layer by layer: a writes 8x8x4 (the model input outside the arena), b streams it into 8x8x2 16 B below
    assert layer_by_layer_peak([first, second], 0) == 256 + 16
    # a 1x1 stage needs no halo, so no pixel is computed twice
    assert plan.extra_macs == 0
    halo = plan_cost([second, first], 2, (2, 1), rest_peak_bytes=0, total_macs=10_000)
    # first (3x3, pad 1) over rows 0..3 needs rows 0..4 of `second`'s output: 5x8 instead of 4x8, per patch
    assert halo.extra_macs == 2 * 8 * (4 * 2)  # one extra row of 8 pixels per patch, 8 MACs per pixel
    plans = search([first, second], lambda cut: 0, 10_000, max_grid=2)
    assert plans[0].arena_bytes == min(p.arena_bytes for p in plans)
    assert best_within(plans, 0.0).extra_macs == 0


def stream(stages, weights, x, bands: int, driver: int) -> np.ndarray:
    """The chain on `x` streamed as tvm_ext.transform.patch_prefix runs it (stream_rows): each stage holds only
    the input rows computed in earlier bands that a later band reads (a row read from anywhere else fails), and
    computes each output row once, from its rows' clipped receptive field, padded only at the true border."""
    schedule = stream_rows(stages, bands, driver)
    held: list[dict[int, np.ndarray]] = [{r: x[r] for r in range(x.shape[0])}] + [{} for _ in stages[1:]]
    out = {}
    for k, rows in enumerate(schedule):
        for i, (stage, (start, stop)) in enumerate(zip(stages, rows)):
            if start == stop:
                continue
            (kh, kw), (sh, sw), (pt, pl) = stage.kernel, stage.stride, stage.pad
            H, W = stage.in_hw
            ir0, ir1 = receptive_rows((start, stop), kh, sh, pt, H)
            tile = np.stack([held[i][r] for r in range(ir0, ir1)])  # KeyError: a row not held
            pads = (ir0 - (start * sh - pt), (stop - 1) * sh - pt + kh - ir1, pl,
                    (stage.out_hw[1] - 1) * sw + kw - W - pl)
            result = window_op(tile, stage, None if stage.name.startswith("pool") else weights[i], pads)
            following = next((later[i] for later in schedule[k + 1:] if later[i][0] < later[i][1]), None)
            first = H if following is None else receptive_rows(following, kh, sh, pt, H)[0]
            if i > 0:
                held[i] = {r: row for r, row in held[i].items() if r >= first}  # the rows no later band reads go
            target = held[i + 1] if i + 1 < len(stages) else out
            for r in range(start, stop):
                assert r not in target  # each output row computed once
                target[r] = result[r - start]
    return np.stack([out[r] for r in range(stages[-1].out_hw[0])])


@pytest.mark.parametrize("bands", [2, 3, 5, 11])
@pytest.mark.parametrize("pushed", [False, True])
def test_streamed_bands_compute_every_row_once_from_the_rows_they_hold(bands, pushed):
    """Driven from the last stage (its rows pulled through the chain) or from the first (rows pushed on as soon
    as their inputs are there: line buffering), every band computes the whole layers' values."""
    rng = np.random.default_rng(1)
    stages = chain()
    weights = [rng.integers(-5, 6, size=(*s.kernel, s.in_channels, s.out_channels)) for s in stages]
    image = rng.integers(-128, 128, size=(*stages[0].in_hw, stages[0].in_channels))
    driver = 0 if pushed else top_stage(stages)
    if bands > stages[driver].out_hw[0]:
        pytest.skip("more bands than rows")
    np.testing.assert_array_equal(stream(stages, weights, image, bands, driver), run(stages, weights, image))
    plan = stream_cost(stages, len(stages), bands, driver, rest_peak_bytes=0, total_macs=1)
    assert plan.extra_macs == 0 and plan.streamed and plan.grid == (bands, 1)


def test_a_reducing_stage_takes_the_rows_of_the_stage_before_band_by_band():
    """A global average pool (reduces) computes its one row in the last band; the stage before delivers its rows
    in the bands, and line buffering holds far less than the whole layers."""
    stages = chain()
    last = stages[-1]
    pool = WindowStage("gap", last.out_hw, (1, 1), last.out_channels, last.out_channels, last.out_hw, last.out_hw,
                       (0, 0), 0, reduces=True)
    schedule = stream_rows([*stages, pool], 3, top_stage([*stages, pool]))
    assert top_stage([*stages, pool]) == len(stages) - 1
    assert [rows[-1] for rows in schedule] == [(0, 0), (0, 0), (0, 1)]
    assert [rows[-2] for rows in schedule] == split(last.out_hw[0], 3)
    wide = [WindowStage(f"c{i}", (40, 40), (40, 40), 8, 8, (3, 3), (1, 1), (1, 1), 1600 * 9 * 64) for i in range(4)]
    gap = WindowStage("gap", (40, 40), (1, 1), 8, 8, (40, 40), (40, 40), (0, 0), 0, reduces=True)
    streamed = stream_cost([*wide, gap], 5, 40, 0, rest_peak_bytes=0, total_macs=1)
    assert streamed.arena_bytes < layer_by_layer_peak(wide, 0) / 4


def residual() -> tuple[list[WindowStage], list[tuple[int, ...]]]:
    """A residual block in stages and what each reads: conv 3x3 -> conv 3x3 -> join (add) of both convs' outputs
    -> conv 3x3 s2 beside a 1x1 s2 skip of the join -> join; 9 x 7, 4 channels, then 5 x 4, 8."""
    full, half = (9, 7), (5, 4)
    stages = [WindowStage("c0", full, full, 3, 4, (3, 3), (1, 1), (1, 1), 1),
              WindowStage("c1", full, full, 4, 4, (3, 3), (1, 1), (1, 1), 1),
              WindowStage("j2", full, full, 4, 4, (1, 1), (1, 1), (0, 0), 0),
              WindowStage("c3", full, half, 4, 8, (3, 3), (2, 2), (1, 1), 1),
              WindowStage("s4", full, half, 4, 8, (1, 1), (2, 2), (0, 0), 1),
              WindowStage("j5", half, half, 8, 8, (1, 1), (1, 1), (0, 0), 0)]
    return stages, [(-1,), (0,), (0, 1), (2,), (2,), (4, 3)]


@pytest.mark.parametrize("bands", [2, 3, 9])
def test_streamed_branches_rejoin_once_both_have_the_rows(bands):
    """Pushed from the first stage, a join computes a row only once every stage it reads has it, a stage reads
    only rows computed in earlier bands or this one, and every row is computed once; a band a row holds less
    than the whole layers (the cut output's rows and their concatenation included)."""
    stages, inputs = residual()
    schedule = stream_rows(stages, bands, 0, inputs)
    done = [0] * len(stages)
    for rows in schedule:
        for i, (start, stop) in enumerate(rows):
            assert start == done[i]  # every row once, in order
            for p in inputs[i]:
                if p >= 0 and stop > start:
                    s = stages[i]
                    assert receptive_rows((start, stop), s.kernel[0], s.stride[0], s.pad[0], s.in_hw[0])[1] <= done[p]
            done[i] = stop
    assert done == [s.out_hw[0] for s in stages]
    assert valid_cuts(inputs, len(stages)) == [1, 3, 6]  # after c1, the join still reads c0; after j2, c3 and s4
    plan = stream_cost(stages, 6, bands, 0, 0, 1, inputs)
    assert plan.extra_macs == 0
    if bands == stages[0].out_hw[0]:  # one row a band: line buffering
        assert plan.arena_bytes < layer_by_layer_peak(stages, 0, inputs)
