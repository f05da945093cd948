"""The int8 shared models, lowered by LowerQuantizedToInteger and run on the Relax VM, against TFLite Micro.

Every model runs 20 deterministic random int8 inputs; every kernel's output (the model's intermediate
tensors, mapped through the TFLite operator index each kernel carries) must equal TFLM's tensor exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tflite
import tvm
from tflite_micro import runtime  # the golden reference
from tvm import relax
from tvm.ir.expr import Constant

from backends.backend import KernelSchedules
from conftest import models_dir
from tvm_ext.frontend import import_model
from tvm_ext.layers import Layers, bindings_of, constant_bytes
from tvm_ext.transform import LowerQuantizedToInteger

NUM_INPUTS = 20
MODELS = [
    pytest.param("tflm/hello_world_int8.tflite", id="hello_world_int8"),
    pytest.param("mlperf_tiny/ad01_int8.tflite", id="ad01_int8"),
    pytest.param("mlperf_tiny/kws_ref_model.tflite", id="kws_ref_model"),
    pytest.param("mlperf_tiny/str_ww_ref_model.tflite", id="str_ww_ref_model", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/pretrainedResnet_quant.tflite", id="pretrainedResnet_quant", marks=pytest.mark.slow),
    pytest.param("mlperf_tiny/vww_96_int8.tflite", id="vww_96_int8", marks=pytest.mark.slow),
]
INTEGER_DTYPES = {"int8", "int16", "int32"}
# Semantics-preserving TIR clean-ups of TVM's default LLVM pipeline that take three quarters of the build of
# these kernels (ad01_int8: 21 s -> 5.6 s). Our C pipeline (tvm_ext.codegen.codegen_c) runs neither; the LLVM
# executable computes the same integers without them, and those integers are all this test reads.
SLOW_CLEANUP_PASSES = ["s_tir.HoistIfThenElse", "tirx.RemoveNoOp"]


@dataclass
class LoweredModel:
    """A model lowered to integer kernels and built for the host, with every kernel's output exposed."""

    path: Path
    tflite_model: object
    lowered: tvm.IRModule
    vm: relax.VirtualMachine
    op_indices: list[int]  # TFLite operator index of each probe output


def _expose_all_kernel_outputs(mod: tvm.IRModule) -> tuple[tvm.IRModule, list[int]]:
    """main returning every call_tir result, and each one's TFLite operator index (the pass's record)."""
    layers = Layers.of(mod["main"])
    operator_indices = [layers.of_binding(position)[0].operator_index
                        for position, binding in enumerate(bindings_of(mod["main"]))
                        if isinstance(binding.value, relax.Call) and binding.value.op.name == "relax.call_tir"]
    mod = relax.transform.ToNonDataflow()(mod)
    main = mod["main"]
    results, indices = [], []
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.name == "relax.call_tir":
                results.append(binding.var)
                indices.append(operator_indices[len(indices)])
    outputs = relax.Tuple(results)
    probe = relax.Function(main.params, relax.SeqExpr(main.body.blocks, outputs), ret_ty=relax.TupleType([r.ty for r in results]))
    mod["main"] = probe
    return mod, indices


_CACHE: dict[str, LoweredModel] = {}


@pytest.fixture(scope="module")
def lowered_models():
    """Models are lowered and built once per test module (building is the slow part)."""
    yield _CACHE


def _lowered(cache: dict, relative: str) -> LoweredModel:
    if relative not in cache:
        path = models_dir() / relative
        model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
        # Our frontend: its layer records give each kernel call its TFLite operator index.
        lowered = LowerQuantizedToInteger(model_name=path.name)(import_model(path).mod)
        probe, indices = _expose_all_kernel_outputs(lowered)
        with tvm.transform.PassContext(disabled_pass=SLOW_CLEANUP_PASSES):
            executable = relax.build(probe, target="llvm")
        vm = relax.VirtualMachine(executable, tvm.cpu())
        cache[relative] = LoweredModel(path, model, lowered, vm, indices)
    return cache[relative]


def _random_inputs(interpreter, seed: int) -> np.ndarray:
    details = interpreter.get_input_details(0)
    return np.random.default_rng(seed).integers(-128, 128, details["shape"]).astype(details["dtype"])


@pytest.mark.parametrize("relative", MODELS)
def test_every_kernel_output_matches_tflite_micro_bit_exactly(lowered_models, relative):
    model = _lowered(lowered_models, relative)
    interpreter = runtime.Interpreter.from_file(
        str(model.path), intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors
    )
    subgraph = model.tflite_model.Subgraphs(0)
    output_tensor = [subgraph.Operators(i).Outputs(0) for i in range(subgraph.OperatorsLength())]
    assert sorted(model.op_indices) == list(range(subgraph.OperatorsLength())), "one kernel per TFLite operator"
    worst = 0
    for seed in range(NUM_INPUTS):
        x = _random_inputs(interpreter, seed)
        interpreter.set_input(x, 0)
        interpreter.invoke()
        ours = model.vm["main"](tvm.runtime.tensor(x))
        for position, op_index in enumerate(model.op_indices):
            theirs = interpreter.GetTensor(output_tensor[op_index], 0)["tensor_data"]
            got = ours[position].numpy()
            assert got.shape == tuple(theirs.shape), f"operator {op_index}"
            worst = max(worst, int(np.abs(got.astype(np.int32) - theirs.astype(np.int32)).max()))
        last = model.op_indices.index(max(model.op_indices))
        np.testing.assert_array_equal(ours[last].numpy(), interpreter.get_output(0))
    assert worst == 0, f"{model.path.name}: max difference {worst} LSB"


@pytest.mark.parametrize("relative", MODELS[:3])
def test_lowered_main_is_integer_only(lowered_models, relative):
    """main calls only TE kernels; weights stay int8, biases int32/int16 (no float constant materialises)."""
    main = _lowered(lowered_models, relative).lowered["main"]
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Var):
                continue
            assert value.op.name == "relax.call_tir", value.op.name
            for arg in value.args[1].fields:
                assert str(arg.ty.dtype) in INTEGER_DTYPES, f"{binding.var.name}: {arg.ty.dtype}"
            assert str(value.ty.dtype) == "int8"


def _paired_weight_constants(mod: tvm.IRModule) -> int:
    """How many int32 constants of rank 3 or 5 (`pair_weights`' words: a FULLY_CONNECTED's, a CONV_2D's
    [O / 8, KH, KW, I, 4]) main's kernel calls (``call_tir``) read."""
    return sum(1 for binding in bindings_of(mod["main"]) if isinstance(binding.value, relax.Call)
               for args in binding.value.args if isinstance(args, relax.Tuple) for arg in args.fields
               if isinstance(arg, Constant) and hasattr(arg.value, "numpy")
               and str(arg.value.numpy().dtype) == "int32" and arg.value.numpy().ndim in (3, 5))


@pytest.mark.parametrize("flash_bytes, paired", [(None, 5), (4_194_304, 5), (2 * 29_048, 5), (2 * 29_048 - 1, 0)])
def test_weights_are_paired_only_where_twice_the_constants_fit_the_flash(flash_bytes, paired):
    """kws_ref_model (29,048 B of constants as the lowering reads them: `tvm_ext.layers.constant_bytes`) with paired
    weights asked for: its five CONV_2D kernels of 64 channels (10x4, four 1x1) take paired weights where twice its
    constants fit ``flash_bytes`` (no limit, a 4 MiB flash, exactly twice), none a byte below; its last
    FULLY_CONNECTED (12 channels) is never paired."""
    path = models_dir() / "mlperf_tiny/kws_ref_model.tflite"
    pairing = KernelSchedules(output_channel_tile=4, float_channel_tiles=(), mac=None, paired_weights=True)
    lowered = LowerQuantizedToInteger(model_name=path.name, schedules=pairing,
                                      flash_bytes=flash_bytes)(import_model(path).mod)
    assert _paired_weight_constants(lowered) == paired


def _widened_depthwise_constants(mod: tvm.IRModule) -> int:
    """How many int16 constants of rank 3 (a DEPTHWISE_CONV_2D's weights widened to int16, (KH, KW, C)) main's
    kernel calls (``call_tir``) read."""
    return sum(1 for binding in bindings_of(mod["main"]) if isinstance(binding.value, relax.Call)
               for args in binding.value.args if isinstance(args, relax.Tuple) for arg in args.fields
               if isinstance(arg, Constant) and hasattr(arg.value, "numpy")
               and str(arg.value.numpy().dtype) == "int16" and arg.value.numpy().ndim == 3)


KWS_CONSTANT_BYTES = 29_048
KWS_DEPTHWISE_WEIGHTS = 3 * 3 * 64  # each of its four 3x3 DEPTHWISE_CONV_2D's int8 weights (bytes)


AD01_ROW_WEIGHTS = 264_192  # ad01_int8's ten one-row FULLY_CONNECTED layers' int8 weights (bytes; its MACs)


def _widened_row_constants(mod: tvm.IRModule) -> int:
    """How many int16 constants of rank 3 (`widen_rows`' halves [O / 4, K / 4, 16]) main's kernel calls read."""
    return sum(1 for binding in bindings_of(mod["main"]) if isinstance(binding.value, relax.Call)
               for args in binding.value.args if isinstance(args, relax.Tuple) for arg in args.fields
               if isinstance(arg, Constant) and hasattr(arg.value, "numpy")
               and str(arg.value.numpy().dtype) == "int16" and arg.value.numpy().ndim == 3
               and arg.value.numpy().shape[-1] == 16)


@pytest.mark.parametrize("spare_bytes, widened", [(None, 10), (AD01_ROW_WEIGHTS, 10), (AD01_ROW_WEIGHTS - 1, 0)])
def test_fully_connected_rows_widen_all_together_while_the_flash_holds_them(spare_bytes, widened):
    """ad01_int8 with widened rows asked for (a price every model pays): its ten one-row FULLY_CONNECTED layers take
    int16 weights where the flash beyond the model's constants holds the extra byte per weight of all of them (no
    limit, or exactly their bytes), none a byte less (all or none). Their
    bit-exactness under QEMU: tests/backends/cortex_m/test_wide_mac.py."""
    path = models_dir() / "mlperf_tiny/ad01_int8.tflite"
    mod = import_model(path).mod
    flash_bytes = None if spare_bytes is None else constant_bytes(mod["main"]) + spare_bytes
    widening = KernelSchedules(output_channel_tile=4, float_channel_tiles=(), mac=None, stacked_rows=True,
                               widened_rows_pay=lambda macs, stacked_too: macs == AD01_ROW_WEIGHTS)
    lowered = LowerQuantizedToInteger(model_name=path.name, schedules=widening, flash_bytes=flash_bytes)(mod)
    assert _widened_row_constants(lowered) == widened


@pytest.mark.parametrize("flash_bytes, widened", [
    (None, 4),
    (KWS_CONSTANT_BYTES + 4 * KWS_DEPTHWISE_WEIGHTS, 4),
    (KWS_CONSTANT_BYTES + 4 * KWS_DEPTHWISE_WEIGHTS - 1, 3),
    (KWS_CONSTANT_BYTES + KWS_DEPTHWISE_WEIGHTS - 1, 0),
])
def test_depthwise_weights_widen_while_the_flash_holds_their_extra_bytes(flash_bytes, widened):
    """kws_ref_model (29,048 B of constants) with depthwise weights widened to int16 asked for (up to 25 taps, as the
    DSP cores'): each of its four 3x3 DEPTHWISE_CONV_2D layers of 64 channels takes int16 weights (576 more bytes)
    while the flash beyond the model's constants holds them, layer after layer (no limit or room for all four: four;
    a byte less: three; less than one layer's: none), the others keeping int8 weights."""
    path = models_dir() / "mlperf_tiny/kws_ref_model.tflite"
    widening = KernelSchedules(output_channel_tile=4, float_channel_tiles=(), mac=None, widened_depthwise_taps=25)
    lowered = LowerQuantizedToInteger(model_name=path.name, schedules=widening,
                                      flash_bytes=flash_bytes)(import_model(path).mod)
    assert _widened_depthwise_constants(lowered) == widened
