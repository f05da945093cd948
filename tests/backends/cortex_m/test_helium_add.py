"""Helium's int8 ADD (backends/cortex_m/schedules/helium_add.py, the helper
backends/cortex_m/helpers/templates/helium_add.h.in): on cortex-m55 an int8 ADD of two computed operands of one
shape is, where the flash holds no table (the kernel from values tabled at compile time comes first: test_dsp_add),
one call of `<prefix>_add_s8_tables` and of `<prefix>_add_s8` per run (here one: either operand of the
larger scale, a fused ReLU, a count that leaves a predicated tail; two ADDs of one shape one kernel, their
quantization its constants), a broadcast ADD and one of fewer than
helium_add.FEWEST_ELEMENTS elements keep the generic kernel, and every one stays bit for bit with TFLite Micro under QEMU mps3-an547 (MVE) and on the host (the helper's
portable C); other cores keep the generic kernel."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

import backends.cortex_m.schedules as cortex_m_schedules  # noqa: E402
from backends.cortex_m.schedules.helium_add import FEWEST_ELEMENTS, helium_adds_pay  # noqa: E402
from backends.cortex_m.schedules.helium_add_values import values_first_pays  # noqa: E402
from tvm_ext.kernels import Rounding  # noqa: E402
from tvm_ext.transform import lower_quantized_to_integer  # noqa: E402
from tvm_ext.transform.int8.lowering import FlashBudget  # noqa: E402
from tvm_ext.kernels.quant_params import add_params  # noqa: E402
from tvm_ext.transform.int8.add import ComputedAdd  # noqa: E402

SHAPE = (1, 5, 7, 9)
"""315 elements (at least helium_add.FEWEST_ELEMENTS): 78 whole vectors of four lanes and three predicated lanes."""
FEW = (1, 4, 4, 4)
"""64 elements: below helium_add.FEWEST_ELEMENTS."""
RELU = 1  # tflite.ActivationFunctionType


def _add_model(shape: tuple[int, ...] = SHAPE) -> bytes:
    """Inputs a of `shape` (scale 0.05, zero point -128), b (0.11, 127) and c [1, 1, 1, channels] (0.02, 4), and
    three ADDs, each a model output: a + b (b the larger scale), b + a with a ReLU (its output's zero point its
    lower bound), and a + c (broadcast: the generic kernel)."""
    tensors = [Tensor("a", shape, "int8", Quantization((0.05,), (-128,))),
               Tensor("b", shape, "int8", Quantization((0.11,), (127,))),
               Tensor("c", (1, 1, 1, shape[-1]), "int8", Quantization((0.02,), (4,))),
               Tensor("sum", shape, "int8", Quantization((0.13,), (-3,))),
               Tensor("relu_sum", shape, "int8", Quantization((0.07,), (-20,))),
               Tensor("broadcast_sum", shape, "int8", Quantization((0.06,), (9,)))]
    operators = [Operator("ADD", (0, 1), (3,), Options("AddOptions", {"FusedActivationFunction": 0})),
                 Operator("ADD", (1, 0), (4,), Options("AddOptions", {"FusedActivationFunction": RELU})),
                 Operator("ADD", (0, 2), (5,), Options("AddOptions", {"FusedActivationFunction": 0}))]
    return build(Model(tensors, operators, (0, 1, 2), (3, 4, 5)))


def _no_flash_to_spare(monkeypatch) -> None:
    """The profile's flash holds no byte more than the model's constants: no ADD's tables in flash (the kernel from
    values tabled at compile time, which Helium's lowering tries first: test_dsp_add), so Helium's own ADD."""
    monkeypatch.setattr(lower_quantized_to_integer, "FlashBudget", lambda spare_bytes: FlashBudget(0))


@needs_cross_tools
def test_helium_int8_add_is_one_helper_call_and_stays_bit_exact(tmp_path, monkeypatch):
    # the helper wherever it fits, its price per model aside (two ADDs of 315 elements do not pay it:
    # test_helium_adds_pay_per_model), where the flash holds no table
    monkeypatch.setattr(cortex_m_schedules, "helium_adds_pay", lambda elements: True)
    _no_flash_to_spare(monkeypatch)
    bundle, kernels = bit_exact_bundle(tmp_path, "add", _add_model(), "cortex-m55", "mps3-an547")
    calls = re.findall(r"_add_s8\((.*)\);", kernels)
    # the broadcast ADD keeps the generic kernel; the other two, of one shape, share one kernel (their quantization
    # the constants each call passes: tvm_ext.transform.share_constant_variants)
    assert len(calls) == 1 and "constants[" in calls[0], kernels
    assert kernels.count("_add_s8_tables(") == 1, kernels  # each ADD's tables built once, before its runs
    assert all(", 315, " in call for call in calls), calls
    assert "vldrwq_gather_shifted_offset_s32(" in (bundle.out_dir / "add_internal.h").read_text()
    symbols = subprocess.run(["arm-none-eabi-nm", str(bundle.library)], capture_output=True, text=True,
                             check=True).stdout
    # one out-of-line copy of the run's ADD and of the tables' builder (gcc may name it a .constprop clone) serves
    # both ADD kernels
    for helper in ("add_s8", "add_s8_tables"):
        assert len(re.findall(rf" t \w+_{helper}(\.[\w.]+)?$", symbols, re.M)) == 1, symbols
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable loop


@needs_cross_tools
def test_an_add_of_few_elements_keeps_the_generic_kernel_on_helium(tmp_path, monkeypatch):
    """Below helium_add.FEWEST_ELEMENTS the helper's tables are most of its cost, and the generic
    kernel may fuse with its neighbours: 64 elements stay generic, bit-exact (wherever the helper pays)."""
    monkeypatch.setattr(cortex_m_schedules, "helium_adds_pay", lambda elements: True)
    _bundle, kernels = bit_exact_bundle(tmp_path, "add", _add_model(FEW), "cortex-m55", "mps3-an547")
    assert "_add_s8(" not in kernels and "_add_s8_tables(" not in kernels


@needs_cross_tools
def test_adds_that_do_not_pay_the_helper_keep_the_generic_kernel_on_helium(tmp_path, monkeypatch):
    """Two ADDs of 315 elements save less than the helpers' one copy costs at the price of code: where the flash
    holds no table, both take the generic kernel, bit-exact."""
    _no_flash_to_spare(monkeypatch)
    bundle, kernels = bit_exact_bundle(tmp_path, "add", _add_model(), "cortex-m55", "mps3-an547")
    assert "_add_s8(" not in kernels and "_add_s8_tables(" not in kernels and "_add_s8_value" not in kernels
    assert json.loads((bundle.out_dir / "manifest.json").read_text())["headroom"]["flash_weights_bytes"] == 0


def _adds(counts: list[tuple[int, bool]], rounding: Rounding = Rounding.DOUBLE) -> list[ComputedAdd]:
    """ADDs of (output elements, whether both operands are elementwise kernels' results) each, of the test model's
    scales (a 0.05, b 0.11, output 0.13) and ``rounding``."""
    params = add_params(0.05, 0.11, 0.13, rounding)
    return [ComputedAdd(count, fused, params, rounding) for count, fused in counts]


def test_helium_adds_pay_per_model():
    """The helper pays where its ADDs' saved instructions reach its one copy's code and that of the layer norms it
    splits at the price (cortex-m55, measured against the generic kernel for every ADD)."""
    vit2h = [(720, True), (720, False), (720, True), (1296, False), (720, False), (720, True)]
    assert not helium_adds_pay(_adds(vit2h))  # 1,276 B of code for 88,786 instructions
    assert helium_adds_pay(_adds([(3072, True), (3072, False)] * 2 + [(3072, True)]))  # vit_tiny_16_int8
    # vit3h_d36_b2_20_int8: 1,648 B, 175,350
    assert helium_adds_pay(_adds([(900, True), (900, False)] * 4 + [(900, True)]))
    mobilenet_v3s = [(1600, False)] + [(600, False)] * 4 + [(432, False)] * 2
    assert helium_adds_pay(_adds(mobilenet_v3s))  # 404 B for 64,580
    assert helium_adds_pay(_adds([(1024, False)] + [(384, False)] * 4 + [(224, False)] * 2))  # seed 59's: 92 B, 33,129
    assert helium_adds_pay(_adds([(4096, False), (1024, False), (1024, False), (512, False), (512, False),
                                  (512, False), (768, False), (768, False), (320, False),
                                  (320, False)]))  # mobilenet_v2_050_64_int8
    # below the helper's fewest elements: none taken
    assert not helium_adds_pay(_adds([(FEWEST_ELEMENTS - 1, False)] * 1000))
    assert not helium_adds_pay([])


def test_the_kernel_from_tables_in_flash_comes_first_where_its_code_pays():
    """Helium's kernel from tables in flash (helium_add_values.py) before its own ADD where the code it saves pays the
    instructions it costs (cortex-m55, measured): simple_add_model's one ADD of 16,384 elements (184 B less code for
    10,638 instructions more), pretrainedResnet_quant's three (232 B for 17,284); not mobilenet_v2_050_64_int8's ten
    in five sizes (156 B more code for 4,882 instructions fewer); nothing without an ADD it takes."""
    assert values_first_pays(_adds([(16384, False)]))
    assert values_first_pays(_adds([(16384, False), (8192, False), (4096, False)]))
    assert not values_first_pays(_adds([(4096, False), (1024, False), (1024, False), (512, False), (512, False),
                                        (512, False), (768, False), (768, False), (320, False), (320, False)]))
    assert not values_first_pays(_adds([(FEWEST_ELEMENTS - 1, False)]))


def test_helium_adds_price_counts_only_the_adds_the_helper_takes():
    """An ADD outside the helper's contract (`fits_add_s8`: single rounding here) keeps the generic kernel, so it
    saves nothing toward the helpers' copy: mobilenet_v2_050_64_int8's ADDs pay it under double rounding, not under
    single, nor where one such ADD is the only large one."""
    mobilenet_v2 = [(4096, False), (1024, False), (1024, False), (512, False), (512, False), (512, False),
                    (768, False), (768, False), (320, False), (320, False)]
    assert helium_adds_pay(_adds(mobilenet_v2))
    assert not helium_adds_pay(_adds(mobilenet_v2, Rounding.SINGLE))
    assert not helium_adds_pay(_adds([(4096, False)], Rounding.SINGLE) + _adds([(320, False)]))


@needs_cross_tools
def test_other_cores_keep_the_generic_int8_add(tmp_path):
    _bundle, kernels = bit_exact_bundle(tmp_path, "add", _add_model(), "cortex-m4f", "mps2-an386")
    assert "_add_s8(" not in kernels
