"""The DSP cores' int8 ADD and SUB from the operands' tabled values (backends/cortex_m/schedules/dsp_add.py, the
helper backends/cortex_m/helpers/templates/add_s8_values.h.in, the lowering tvm_ext/transform/int8/binary.py
values_call): on cortex-m4f an int8 ADD or SUB of at least binary.VALUES_ELEMENTS elements is an element loop
calling `<prefix>_add_s8_value` (either operand of the larger scale, a fused ReLU narrower than int8, SUB, operands
of equal scale, a broadcast operand), the tables in flash shared by the layers of one operand quantization; a small
one keeps the generic kernel; every one bit for bit with TFLite Micro under QEMU mps2-an386 and on the host (the
helper's portable C), and on rv32imc under QEMU virt (the same kernels, the portable C); on cortex-m55 the ADDs and
SUBs of operands of one shape four outputs a call (helium_add_values.py). (Every operand pair: test_int8_elementwise_ops.)"""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tflite")
pytest.importorskip("tflite_micro", reason="tflite-micro is the golden reference")
from c_checks import kernel_bodies  # noqa: E402
from test_requantize_epilogue import bit_exact_bundle, host_selftest_passes, needs_cross_tools  # noqa: E402
from tflite_builder import Model, Operator, Options, Quantization, Tensor, build  # noqa: E402

import numpy as np  # noqa: E402

import backends.cortex_m.schedules as cortex_m_schedules  # noqa: E402
from tvm_ext.transform.int8.binary import VALUES_ELEMENTS  # noqa: E402

SHAPE = (1, 5, 7, 9)
"""315 elements: at least VALUES_ELEMENTS."""
FEW = (1, 4, 4, 4)
"""64 elements: fewer than VALUES_ELEMENTS."""
RELU = 1  # tflite.ActivationFunctionType


def _model(shape: tuple[int, ...]) -> bytes:
    """Inputs a of `shape` (scale 0.05, zero point -128), b (0.11, 127), d (0.05, 3: a's scale) and c
    [1, 1, 1, channels] (0.02, 4), and each a model output: a + b (b the larger scale), b + a with a ReLU (its
    output's zero point -20 its lower bound: a clamp), a - b, a + b again into another output (the same table of
    a), a - d (equal scales), and a + c (c broadcast)."""
    tensors = [Tensor("a", shape, "int8", Quantization((0.05,), (-128,))),
               Tensor("b", shape, "int8", Quantization((0.11,), (127,))),
               Tensor("c", (1, 1, 1, shape[-1]), "int8", Quantization((0.02,), (4,))),
               Tensor("d", shape, "int8", Quantization((0.05,), (3,))),
               Tensor("sum", shape, "int8", Quantization((0.13,), (-3,))),
               Tensor("relu_sum", shape, "int8", Quantization((0.07,), (-20,))),
               Tensor("difference", shape, "int8", Quantization((0.09,), (11,))),
               Tensor("sum_again", shape, "int8", Quantization((0.2,), (40,))),
               Tensor("equal_difference", shape, "int8", Quantization((0.04,), (-7,))),
               Tensor("broadcast_sum", shape, "int8", Quantization((0.06,), (9,)))]
    plain, relu = ({"FusedActivationFunction": 0}, {"FusedActivationFunction": RELU})
    operators = [Operator("ADD", (0, 1), (4,), Options("AddOptions", plain)),
                 Operator("ADD", (1, 0), (5,), Options("AddOptions", relu)),
                 Operator("SUB", (0, 1), (6,), Options("SubOptions", plain)),
                 Operator("ADD", (0, 1), (7,), Options("AddOptions", plain)),
                 Operator("SUB", (0, 3), (8,), Options("SubOptions", plain)),
                 Operator("ADD", (0, 2), (9,), Options("AddOptions", plain))]
    return build(Model(tensors, operators, (0, 1, 2, 3), (4, 5, 6, 7, 8, 9)))


def _kernel_calls(bundle, kernels: str, helper: str) -> int:
    """How many of the run function's kernel calls run a kernel whose body calls `helper` (a name's tail)."""
    users = [name for name, body in kernel_bodies(kernels).items() if f"{helper}(" in body]
    run = (bundle.out_dir / f"{bundle.plan.model}_model.c").read_text()
    return sum(run.count(f"{name}(") for name in users)


def _value_helper_calls(bundle, kernels: str) -> int:
    """How many of the run function's kernel calls run a kernel that calls `<prefix>_add_s8_value`: one per layer
    taking the helper, whether or not layers that differ only in their constants share one kernel
    (tvm_ext/transform/share_constant_variants.py)."""
    return _kernel_calls(bundle, kernels, "_add_s8_value")


LARGE = (1, 8, 16, 9)
"""1,152 elements: at least elementwise.TABLED_ELEMENTS, where the generic kernel tables an operand too."""


@needs_cross_tools
@pytest.mark.parametrize("target,board,shape,calls,tables", [("cortex-m4f", "mps2-an386", SHAPE, 6, 4),
                                                             ("rv32imc", "virt", LARGE, 5, 3),
                                                             ("rv32imc", "virt", SHAPE, 0, 0)])
def test_dsp_add_and_sub_read_tabled_values_and_stay_bit_exact(tmp_path, target, board, shape, calls, tables):
    """On cortex-m4f (SMMLAR, SSAT) every layer; on rv32imc (the portable C; the elementwise kernels' flat loops
    beside the broadcast one's nest: tvm_ext/schedule/flat_elements.py) the layers where the instructions saved pay
    the flash the tables add at the code price (backends/riscv/schedules/add_values_price.py): of 1,152 elements,
    those whose table replaces the generic kernel's (a - d of equal scales, which the generic kernel shifts, keeps
    it), of 315 none (a fresh 1 KB table each)."""
    assert SHAPE[1] * SHAPE[2] * SHAPE[3] >= VALUES_ELEMENTS > FEW[1] * FEW[2] * FEW[3]
    bundle, kernels = bit_exact_bundle(tmp_path, "add", _model(shape), target, board)
    assert _value_helper_calls(bundle, kernels) == calls, kernels
    weights = (bundle.out_dir / "add_weights.c").read_text()
    # b is of the larger scale (a shift): a's doubled values with b's zero point term, one table for a + b, b + a
    # and a + b again, one for a - b (the term's other sign), one for a - d (d shifted); c's (a the larger scale);
    # on rv32imc a - d's not (that layer keeps the generic kernel) and none where no layer takes the kernel (each
    # table's comment, an array of its own or a member of rv32imc's weights block)
    assert len(re.findall(r"\(\w+\): int32\[256\] \*/", weights)) == tables, weights
    host_selftest_passes(bundle.out_dir)  # the same C on the host: the helper's portable steps


@needs_cross_tools
def test_helium_adds_and_subs_of_one_shape_take_four_lanes_a_call(tmp_path, monkeypatch):
    """On cortex-m55 (backends/cortex_m/schedules/helium_add_values.py): the ADDs and SUBs of operands of one shape
    (a shifted operand or two tabled, a ReLU's clamp, 315 elements: 78 whole calls and a predicated one of 3) call
    `<prefix>_add_s8_values4` on the tables in flash, before Helium's own ADD (no run-time tables) where that one
    pays (here wherever it fits: three ADDs of 315 elements do not pay it, test_helium_add) and this one's code pays
    more; the broadcast ADD keeps the element loop; bit-exact under QEMU mps3-an547 and on the host (the helper's
    portable C)."""
    monkeypatch.setattr(cortex_m_schedules, "helium_adds_pay", lambda adds: True)
    bundle, kernels = bit_exact_bundle(tmp_path, "add", _model(SHAPE), "cortex-m55", "mps3-an547")
    assert _kernel_calls(bundle, kernels, "_add_s8_values4") == 5, kernels
    assert _value_helper_calls(bundle, kernels) == 1, kernels  # the broadcast a + c
    assert "_add_s8_tables(" not in kernels, kernels
    host_selftest_passes(bundle.out_dir)


def _scaled_add_model() -> bytes:
    """A squeeze-excite block's end: input a of SHAPE (0.05, -128) times s [1, 1, 1, channels] (0.004, -128: a
    hard-sigmoid's output), then plus input b (0.11, 127): the MUL an elementwise kernel, the ADD's input."""
    tensors = [Tensor("a", SHAPE, "int8", Quantization((0.05,), (-128,))),
               Tensor("s", (1, 1, 1, SHAPE[-1]), "int8", Quantization((0.004,), (-128,))),
               Tensor("b", SHAPE, "int8", Quantization((0.11,), (127,))),
               Tensor("scaled", SHAPE, "int8", Quantization((0.04,), (-100,))),
               Tensor("sum", SHAPE, "int8", Quantization((0.13,), (-3,)))]
    plain = {"FusedActivationFunction": 0}
    operators = [Operator("MUL", (0, 1), (3,), Options("MulOptions", plain)),
                 Operator("ADD", (3, 2), (4,), Options("AddOptions", plain))]
    return build(Model(tensors, operators, (0, 1, 2), (4,)))


@needs_cross_tools
def test_helium_add_of_a_computed_product_is_not_fused_into_it(tmp_path, monkeypatch):
    """cortex-m55's ADD from tabled values is an extern stage (its operands read through their addresses): fused
    after the MUL that computes its operand (an SE-ResNet's scaled branch plus its shortcut), FuseTIR refused the
    two kernels' buffers ("Inconsistent buffers ... mapped to the same relax var": the seed-110 unseen set's
    se_resnet_odd_27x45_int8, exit 3). It stays a kernel of its own (tvm_ext/transform/fuse_keeping_layers.py),
    bit-exact under QEMU mps3-an547."""
    monkeypatch.setattr(cortex_m_schedules, "helium_adds_pay", lambda adds: True)
    bundle, kernels = bit_exact_bundle(tmp_path, "scaled_add", _scaled_add_model(), "cortex-m55", "mps3-an547")
    assert _kernel_calls(bundle, kernels, "_add_s8_values4") == 1, kernels


@needs_cross_tools
def test_small_adds_keep_the_generic_kernel(tmp_path):
    _bundle, kernels = bit_exact_bundle(tmp_path, "add", _model(FEW), "cortex-m4f", "mps2-an386")
    assert "_add_s8_value(" not in kernels


def _constant_model() -> bytes:
    """Input a [1, 6, 6, 5] (scale 0.05, zero point -128) and as model outputs a + k (k a constant [1, 1, 1, 5],
    0.03, 1: a the larger scale, k's terms tabled values), k - a (a shifted, negated) and a + m (m a constant of
    a's shape, 0.02, 127: 180 elements, its terms too)."""
    rng = np.random.default_rng(5)
    tensors = [Tensor("a", (1, 6, 6, 5), "int8", Quantization((0.05,), (-128,))),
               Tensor("k", (1, 1, 1, 5), "int8", Quantization((0.03,), (1,)),
                      rng.integers(-128, 128, (1, 1, 1, 5)).astype(np.int8)),
               Tensor("m", (1, 6, 6, 5), "int8", Quantization((0.02,), (127,)),
                      rng.integers(-128, 128, (1, 6, 6, 5)).astype(np.int8)),
               Tensor("sum", (1, 6, 6, 5), "int8", Quantization((0.13,), (-3,))),
               Tensor("difference", (1, 6, 6, 5), "int8", Quantization((0.09,), (11,))),
               Tensor("sum_m", (1, 6, 6, 5), "int8", Quantization((0.2,), (40,)))]
    plain = {"FusedActivationFunction": 0}
    operators = [Operator("ADD", (0, 1), (3,), Options("AddOptions", plain)),
                 Operator("SUB", (1, 0), (4,), Options("SubOptions", plain)),
                 Operator("ADD", (0, 2), (5,), Options("AddOptions", plain))]
    return build(Model(tensors, operators, (0,), (3, 4, 5)))


@needs_cross_tools
def test_a_small_constant_operand_is_read_as_its_terms(tmp_path):
    """An ADD or SUB of an activation of the larger scale and a constant of at most PRESCALED_ELEMENTS elements
    (a per-channel addend) on an output smaller than VALUES_ELEMENTS: the kernel from values, the constant's terms
    computed at compile time (int32, the constant's shape; no 1 KB table), bit-exact."""
    bundle, kernels = bit_exact_bundle(tmp_path, "constant", _constant_model(), "cortex-m4f", "mps2-an386")
    assert 180 < VALUES_ELEMENTS and _value_helper_calls(bundle, kernels) == 3, kernels
    weights = (bundle.out_dir / "constant_weights.c").read_text()
    assert "[256]" not in weights, weights  # no table
    host_selftest_passes(bundle.out_dir)


def test_the_helper_library_compares_equal_after_a_worker_pickles_it():
    """The compile's workers send the libraries their kernels call back pickled; one that compared unequal after
    (a functools.partial's C) was defined twice in a bundle of several subgraphs (a C redefinition)."""
    import pickle

    from backends.cortex_m.schedules.dsp_add import ADD_VALUES_HELPERS

    assert pickle.loads(pickle.dumps(ADD_VALUES_HELPERS)) == ADD_VALUES_HELPERS
