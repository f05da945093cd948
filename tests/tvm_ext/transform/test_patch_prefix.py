"""RunPrefixInPatches (tvm_ext.transform.patch_prefix): a prefix run patch by patch computes the layer-by-layer
values bit for bit, after the int8 lowering, on a small int8 model built here (odd sizes; SAME and VALID, strided
and dilated convolutions, a depthwise convolution, average and max pools at the border), for several cuts and
grids; both agree with TFLite Micro. And the rewritten graph's form: the branches, their slices and padding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tvm
from tflite_micro import runtime  # the golden reference
from tvm import relax

from tflite_models import chain_model, residual_model
from tvm_ext.frontend import import_model
from tvm_ext.layers import Layers, bindings_of
from tvm_ext.transform import LowerQuantizedToInteger
from tvm_ext.transform.patch_prefix import PatchPlanError, RunPrefixInPatches, window_chain

IMAGE = (13, 11)  # odd rows and columns: uneven patches and a stride-2 border


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("patch_prefix") / "chain.tflite"
    path.write_bytes(chain_model(IMAGE))
    return path


def _run_lowered(mod: tvm.IRModule, inputs: list[np.ndarray]) -> list[np.ndarray]:
    lowered = LowerQuantizedToInteger(model_name="chain.tflite")(mod)
    vm = relax.VirtualMachine(relax.build(lowered, target="llvm"), tvm.cpu())
    results = []
    for x in inputs:
        out = vm["main"](tvm.runtime.tensor(x))
        results.append(out.numpy())
    return results


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    extremes = np.where(np.indices((1, *IMAGE, 3)).sum(axis=0) % 2 == 0, -128, 127).astype(np.int8)
    return [rng.integers(-128, 128, (1, *IMAGE, 3)).astype(np.int8), extremes]


def test_the_chain_has_each_window_stage(model_path):
    chain = window_chain(import_model(model_path).mod["main"])
    assert [(s.geometry.out_hw, s.geometry.stride, s.geometry.pad, s.geometry.kernel) for s in chain.stages] == [
        ((7, 6), (2, 2), (1, 1), (3, 3)), ((7, 6), (1, 1), (1, 1), (3, 3)), ((7, 6), (1, 1), (1, 1), (3, 3)),
        ((4, 3), (2, 2), (1, 0), (3, 3)), ((4, 3), (1, 1), (2, 2), (5, 5)), ((2, 1), (1, 1), (0, 0), (3, 3))]


@pytest.fixture(scope="module")
def layer_by_layer(model_path) -> list[np.ndarray]:
    """The model's outputs on _inputs(), lowered layer by layer, checked against TFLite Micro."""
    whole = _run_lowered(import_model(model_path).mod, _inputs())
    interpreter = runtime.Interpreter.from_file(str(model_path))
    for x, expected in zip(_inputs(), whole):
        interpreter.set_input(x, 0)
        interpreter.invoke()
        np.testing.assert_array_equal(expected, interpreter.get_output(0))
    return whole


@pytest.mark.parametrize("cut, grid", [(2, (2, 2)), (3, (3, 2)), (4, (2, 3)), (5, (1, 3)), (6, (2, 1))])
def test_patches_compute_the_layer_by_layer_values_bit_exactly(model_path, layer_by_layer, cut, grid):
    patched_mod = RunPrefixInPatches(cut, grid)(import_model(model_path).mod)
    for expected, got in zip(layer_by_layer, _run_lowered(patched_mod, _inputs()), strict=True):
        np.testing.assert_array_equal(got, expected)
    # the rewrite ran: the first layer's convolution once per patch
    main = patched_mod["main"]
    first_layer = [b for position, b in enumerate(bindings_of(main)) if isinstance(b.value, relax.Call)
                   and b.value.op.name == "relax.nn.conv2d" and Layers.of(main).of_binding(position)[0].name == "conv_s2"]
    assert len(first_layer) == grid[0] * grid[1]


def test_the_rewritten_graph_has_one_branch_per_patch_with_border_padding_only(model_path):
    """Record test of the pass's output for cut 2 (CONV_2D 3x3 s2 SAME, then DEPTHWISE 3x3 SAME), grid 2x1:
    the slices, each branch's padding (top only on the first, bottom only on the last) and the concatenation,
    with each binding's layer."""
    mod = RunPrefixInPatches(2, (2, 1))(import_model(model_path).mod)
    main = mod["main"]
    layers = Layers.of(main)
    seen = []
    for position, binding in enumerate(bindings_of(main)):
        value = binding.value
        name = value.op.name if isinstance(value, relax.Call) else ""
        if name in ("relax.strided_slice", "relax.nn.conv2d", "relax.concat"):
            label = layers.of_binding(position)[0].kind
            shape = tuple(int(d) for d in binding.var.ty.shape)
            detail = ([int(v.value) for v in value.args[2].fields] + [int(v.value) for v in value.args[3].fields]
                      if name == "relax.strided_slice" else
                      [int(p) for p in value.attrs.padding] if name == "relax.nn.conv2d" else int(value.attrs.axis))
            seen.append((name.split(".")[-1], label, shape, detail))
    assert seen[:7] == [
        # depthwise rows [0, 4) of 7 read convolution rows [0, 5), which read input rows [0, 10) of 13: the
        # top border padded, the bottom not (the next patch's rows are real there)
        ("strided_slice", "CONV_2D", (1, 10, 11, 3), [0, 0, 10, 11]),
        ("conv2d", "CONV_2D", (1, 5, 6, 4), [1, 1, 0, 1]),
        ("conv2d", "DEPTHWISE_CONV_2D", (1, 4, 6, 4), [1, 1, 0, 1]),
        # rows [4, 7) read convolution rows [3, 7), input rows [5, 13): the bottom border padded
        ("strided_slice", "CONV_2D", (1, 8, 11, 3), [5, 0, 13, 11]),
        ("conv2d", "CONV_2D", (1, 4, 6, 4), [0, 1, 1, 1]),
        ("conv2d", "DEPTHWISE_CONV_2D", (1, 3, 6, 4), [0, 1, 1, 1]),
        ("concat", "DEPTHWISE_CONV_2D", (1, 7, 6, 4), 1)]


def test_a_cut_beyond_the_chain_or_a_grid_beyond_the_output_is_refused(model_path):
    imported = import_model(model_path).mod
    with pytest.raises(PatchPlanError, match="this model has 6"):
        RunPrefixInPatches(7, (2, 2))(imported)
    with pytest.raises(PatchPlanError, match="2x1 output"):
        RunPrefixInPatches(6, (3, 1))(imported)


@pytest.fixture(scope="module")
def residual_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("patch_prefix") / "residual.tflite"
    path.write_bytes(residual_model(IMAGE))
    return path


def test_a_residual_graph_has_its_joins_as_stages_and_ends_in_one_value_where_no_skip_crosses(residual_path):
    chain = window_chain(import_model(residual_path).mod["main"])
    # the model's order: the block's two convolutions, then the skip's 1x1, then the join and the global pool
    assert chain.inputs == [(-1,), (0,), (0, 1), (2,), (3,), (2,), (5, 4), (6,)]
    assert chain.cuts == (1, 3, 7, 8) and chain.linear == 1
    with pytest.raises(PatchPlanError, match="not where the model's window graph ends in one value"):
        RunPrefixInPatches(2, (2, 1), 0)(import_model(residual_path).mod)
    with pytest.raises(PatchPlanError, match="patches: its chain ends so after stage 1"):
        RunPrefixInPatches(3, (2, 2))(import_model(residual_path).mod)


@pytest.mark.parametrize("cut, bands, driver", [(3, 3, 0), (3, 5, 2), (7, 2, 0), (7, 4, 6), (8, 7, 0), (8, 13, 0),
                                                (8, 3, 6)])
def test_streamed_branches_that_rejoin_compute_the_layer_by_layer_values_bit_exactly(residual_path, cut, bands,
                                                                                    driver):
    """Streamed bands through residual joins (a skip branch keeping only the rows its join still reads), up to a
    join or the global pool after it: bit for bit TFLite Micro's output (which the layer-by-layer lowering
    matches), each convolution's every output row computed once."""
    mod = import_model(residual_path).mod
    interpreter = runtime.Interpreter.from_file(str(residual_path))
    streamed = RunPrefixInPatches(cut, (bands, 1), driver)(mod)
    for x, got in zip(_inputs(), _run_lowered(streamed, _inputs()), strict=True):
        interpreter.set_input(x, 0)
        interpreter.invoke()
        np.testing.assert_array_equal(got, interpreter.get_output(0))


@pytest.mark.parametrize("cut, bands, driver", [(8, 4, 0), (8, 13, 0), (8, 3, 6)])
def test_a_float_global_pool_is_summed_band_by_band_to_the_layer_by_layer_values_bit_exactly(tmp_path, cut, bands,
                                                                                          driver):
    """The float residual graph's global average pool is a reducing stage too: streamed bands through its joins
    add each band's rows to running float sums (in the whole pool's order of additions), averaged once after the
    last band, so no stage output is held whole; the output is the layer-by-layer graph's bit for bit."""
    path = tmp_path / "residual_float.tflite"
    path.write_bytes(residual_model(IMAGE, float32=True))
    mod = import_model(path).mod
    chain = window_chain(mod["main"])
    assert chain.inputs == [(-1,), (0,), (0, 1), (2,), (3,), (2,), (5, 4), (6,)] and chain.geometries[-1].reduces
    streamed = RunPrefixInPatches(cut, (bands, 1), driver)(mod)
    names = [str(b.var.name) for b in bindings_of(streamed["main"])]
    assert sum(name.startswith("row_sums") for name in names) > 1
    assert sum(name.startswith("average_of_sums") for name in names) == 1
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((1, *IMAGE, 3)).astype(np.float32) for _ in range(2)]
    for got, want in zip(_run_lowered(streamed, inputs), _run_lowered(mod, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def dense_path(tmp_path_factory) -> Path:
    """The chain from a flat input (RESHAPEd to the image) into a FULLY_CONNECTED of its flattened last output:
    micro_speech's form."""
    path = tmp_path_factory.mktemp("patch_prefix") / "dense.tflite"
    path.write_bytes(chain_model(IMAGE, dense_units=5, flat_input=True))
    return path


def test_a_dense_head_over_a_flattened_output_is_a_reducing_stage_of_a_reshaped_input(dense_path):
    func = import_model(dense_path).mod["main"]
    chain = window_chain(func)
    assert not chain.source.same_as(func.params[0])  # the input's reshape into the image
    dense = chain.stages[-1].geometry
    assert (dense.in_hw, dense.out_hw, dense.kernel, dense.in_channels, dense.out_channels, dense.reduces) == (
        (2, 1), (1, 1), (2, 1), 6, 5, True)
    assert dense.macs == 2 * 1 * 6 * 5 and len(chain.stages) == 7 and chain.cuts[-1] == 7


@pytest.mark.parametrize("bands, driver", [(2, 0), (7, 0), (2, 5)])
def test_a_dense_head_summed_band_by_band_computes_tflite_micros_values_bit_exactly(dense_path, bands, driver):
    """Streamed bands into a FULLY_CONNECTED over the flattened last output: each band's rows add their partial
    dot products to int32 sums, requantized once after the last band, bit for bit TFLite Micro's output."""
    mod = import_model(dense_path).mod
    interpreter = runtime.Interpreter.from_file(str(dense_path))
    streamed = RunPrefixInPatches(7, (bands, 1), driver)(mod)
    names = [str(b.var.name) for b in bindings_of(streamed["main"])]
    # driven by the last convolution's 2 rows: one partial sum per band; else as many as bands deliver its rows
    assert sum(name.startswith("dense_rows") for name in names) >= (2 if driver == 5 else 1)
    assert sum(name.startswith("fully_connected_of_sums") for name in names) == 1
    for x, got in zip(_inputs(), _run_lowered(streamed, [x.reshape(1, -1) for x in _inputs()]), strict=True):
        interpreter.set_input(x.reshape(1, -1), 0)
        interpreter.invoke()
        np.testing.assert_array_equal(got, interpreter.get_output(0))


@pytest.mark.parametrize("bands, driver", [(3, 0), (2, 5)])
def test_a_mean_summed_band_by_band_computes_tflite_micros_values_bit_exactly(tmp_path, bands, driver):
    """Streamed bands into a MEAN over the rows and columns of the last output (its own output scale): each band's
    rows added to int32 sums, rescaled once after the last band as TFLite's MEAN, bit for bit TFLite Micro's."""
    path = tmp_path / "mean.tflite"
    path.write_bytes(chain_model(IMAGE, global_mean=True))
    mod = import_model(path).mod
    chain = window_chain(mod["main"])
    assert len(chain.stages) == 7 and chain.geometries[-1].reduces and chain.geometries[-1].in_hw == (2, 1)
    interpreter = runtime.Interpreter.from_file(str(path))
    streamed = RunPrefixInPatches(7, (bands, 1), driver)(mod)
    assert any(str(b.var.name).startswith("mean_of_sums") for b in bindings_of(streamed["main"]))
    for x, got in zip(_inputs(), _run_lowered(streamed, _inputs()), strict=True):
        interpreter.set_input(x, 0)
        interpreter.invoke()
        np.testing.assert_array_equal(got, interpreter.get_output(0))
