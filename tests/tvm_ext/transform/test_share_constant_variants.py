"""Kernels equal but for their scalar constants, emitted once (tvm_ext.transform.share_constant_variants)."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, s_tir, te, tirx

from backends.code_price import THUMB2_KERNEL_CODE, KernelCode
from backends.riscv.schedules import RV32C_KERNEL_CODE
from tvm_ext.layers import OPERAND_ROLES_ATTR, STATE_OPERAND_ATTR
from tvm_ext.tir.tir_walk import walk
from tvm_ext.transform.share_constant_variants import (CONSTANTS_ROLE, Group, constant_groups, constant_loads,
                                                       constants_across_loops, in_first_read_order, kernel_bytes, share_constant_variants,
                                                       variable_immediates)


def _chain(scale: int, offset: int, subtract: bool = False):
    """A TE kernel of int8 x: max(max(max(x * scale + offset, 9) * 5, 9) * 5, 9) + 9 (offset subtracted as
    `- |offset|` with `subtract`), int32: a template whose first two immediates are `scale` and `offset`."""
    def kernel(x: te.Tensor) -> te.Tensor:
        def value(i):
            wide = x[i].astype("int32") * scale
            wide = wide - (-offset) if subtract else wide + offset
            return te.max(te.max(te.max(wide, 9) * 5, 9) * 5, 9) + 9
        return te.compute(x.shape, value, name="chain")
    return kernel


def _module(kernels) -> tvm.IRModule:
    """main(x) calling each of `kernels` on x in turn."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((8,), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            results = [bb.emit_te(kernel, x, primfunc_name_hint="chain") for kernel in kernels]
            out = bb.emit_output(relax.Tuple(results))
        bb.emit_func_output(out)
    return bb.get()


def _called(mod: tvm.IRModule) -> list:
    """(PrimFunc name, its last operand) of each call_tir of main."""
    calls = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.same_as(tvm.ir.Op.get("relax.call_tir")):
                calls.append((value.args[0].name_hint, value.args[1].fields[-1]))
    return calls


def test_template_reads_subtraction_as_addition() -> None:
    """Before: x * 3 - 4 and x * 7 + 2. Expected: one template, the values (0, 3, -4, ...) and (0, 7, 2, ...) (x's
    explicit offset 0 first)."""
    a = variable_immediates(te.create_prim_func(_as_tensors(_chain(3, -4, subtract=True))))
    b = variable_immediates(te.create_prim_func(_as_tensors(_chain(7, 2))))
    assert tvm_ffi.structural_equal(a[0], b[0])
    assert a[1][:3] == (0, 3, -4) and b[1][:3] == (0, 7, 2)
    assert len(a[1]) > 3 and a[1][3:] == b[1][3:]  # the chain's other immediates, equal


def _as_tensors(kernel) -> list:
    x = te.placeholder((8,), "int8", name="x")
    return [x, kernel(x)]


def test_groups_share_differing_positions_only() -> None:
    """Before: three kernels of one template (scale, offset) = (3, 5), (7, 5), (3, 5), and one of another
    template (no multiplication). Expected: one group of the first three; only the scale varies (one slot)."""
    funcs = {f"k{i}": te.create_prim_func(_as_tensors(kernel)) for i, kernel in enumerate(
        [_chain(3, 5), _chain(7, 5), _chain(3, 5)])}
    x = te.placeholder((8,), "int8", name="x")
    funcs["other"] = te.create_prim_func([x, te.compute((8,), lambda i: x[i].astype("int32") + 1, name="plus")])
    groups = constant_groups(funcs)
    assert len(groups) == 1
    assert groups[0].names == ("k0", "k1", "k2")
    assert groups[0].slot_of == {1: 0}
    assert groups[0].values == {"k0": (3,), "k1": (7,), "k2": (3,)}


def _indexed(offset: int, scale: int):
    """x[i + offset] * scale + 5 then max(..., 9) * 5 + 9, over 8 elements of a 12-element x."""
    def kernel(x: te.Tensor) -> te.Tensor:
        return te.compute((8,), lambda i: te.max(x[i + offset].astype("int32") * scale + 5, 9) * 5 + 9, name="at")
    return kernel


def _loops(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` without its blocks (their read regions would tell index offsets apart on their own)."""
    passes = tvm.transform.Sequential([s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.LowerOpaqueBlock()])
    return passes(tvm.IRModule({"main": func}))["main"]


def _funcs(kernels) -> dict:
    """name -> PrimFunc (its loops, no blocks) of each TE kernel of an int8 x of 12 elements."""
    funcs = {}
    for i, kernel in enumerate(kernels):
        x = te.placeholder((12,), "int8", name="x")
        funcs[f"k{i}"] = _loops(te.create_prim_func([x, kernel(x)]))
    return funcs


def test_index_offsets_are_not_values() -> None:
    """Before: x[i + 1] * 3 + 5 and x[i + 2] * 3 + 5 (equal but for a load's index offset). Expected: no group of
    values; one group of index offsets, its one slot the offset."""
    funcs = _funcs([_indexed(1, 3), _indexed(2, 3)])
    assert constant_groups(funcs) == []
    groups = constant_groups(funcs, offsets=True)
    assert [(g.names, g.values, g.offsets) for g in groups] == [(("k0", "k1"), {"k0": (1,), "k1": (2,)}, True)]


def test_index_offsets_vary_alone() -> None:
    """Before: x[i + 1] * 3 + 5 and x[i + 2] * 7 + 5 (an index offset and a scale vary). Expected: no group of
    index offsets: with two slots, the range of the constants' values would not bound the index by a member's."""
    assert constant_groups(_funcs([_indexed(1, 3), _indexed(2, 7)]), offsets=True) == []


def test_index_offset_stays_where_values_vary() -> None:
    """Before: x[i + 2] * 3 + 5 and x[i + 2] * 7 + 5. Expected: one group, its one slot the scale, the index
    offset 2 an immediate of the template."""
    groups = constant_groups(_funcs([_indexed(2, 3), _indexed(2, 7)]))
    assert [(g.names, g.values) for g in groups] == [(("k0", "k1"), {"k0": (3,), "k1": (7,)})]
    template, values = variable_immediates(_funcs([_indexed(2, 3)])["k0"])
    assert "x[i + 2]" in template.script() and values[:2] == (0, 3)


def test_table_index_values_vary() -> None:
    """Before: table[(int8)(x[i] * 3) + 128] and table[(int8)(x[i] * 7) + 128] (a lookup, its index a narrowed
    value). Expected: one group whose slot is the scale inside the index (its range is int8's whatever the
    scale); the table's offset 128 stays an immediate."""
    def lookup(scale: int) -> tirx.PrimFunc:
        x, table = te.placeholder((8,), "int8", name="x"), te.placeholder((256,), "int8", name="table")
        return _loops(te.create_prim_func([x, table, te.compute((8,), lambda i: table[
            (x[i].astype("int32") * scale).astype("int8").astype("int32") + 128].astype("int32") * 5 + 9)]))

    groups = constant_groups({"k0": lookup(3), "k1": lookup(7)})
    assert [(g.names, g.values) for g in groups] == [(("k0", "k1"), {"k0": (3,), "k1": (7,)})]


def test_shared_kernel_takes_each_calls_constants() -> None:
    """Before: main calls x * 3 + 5 and x * 7 - 2 (each in a chain). Expected: both calls of one kernel whose
    `constants` input holds (3, 5) and (7, -2); the kernel reads its scale and offset from it."""
    mod = share_constant_variants(_module([_chain(3, 5), _chain(7, -2, subtract=True)]))
    calls = _called(mod)
    assert len({name for name, _ in calls}) == 1
    assert [list(operand.value.numpy()) for _, operand in calls] == [[3, 5], [7, -2]]
    shared = mod[calls[0][0]]
    assert [p.name for p in shared.params] == ["x", CONSTANTS_ROLE, "chain"]
    assert list(shared.attrs[OPERAND_ROLES_ATTR]) == ["data", CONSTANTS_ROLE]  # its C parameter `constants`
    text = shared.script()
    assert 'T.Cast("int32", x[v_i]) * constants[T.int64(0)] + constants[T.int64(1)]' in text
    assert len([gvar for gvar in mod.functions if gvar.name_hint != "main"]) == 1


def _sum_chain(scale: int, swapped: bool):
    """A TE kernel max(max(max(x * scale + y, 9) * 5, 9) * 5, 9) + 9 of int8 x and y, its parameters (x, y), or
    (y, x) with `swapped` (as fusion lists a chain's inputs in one step and the other way in another)."""
    def kernel(first: te.Tensor, second: te.Tensor) -> te.Tensor:
        x, y = (second, first) if swapped else (first, second)

        def value(i):
            wide = x[i].astype("int32") * scale + y[i].astype("int32")
            return te.max(te.max(te.max(wide, 9) * 5, 9) * 5, 9) + 9
        return te.compute(x.shape, value, name="chain")
    return kernel


def test_inputs_in_other_orders_share_one_kernel() -> None:
    """Before: main calls chain(x * 3 + y) with parameters (x, y) and chain(x * 7 + y) with parameters (y, x).
    Expected: one shared kernel of parameters (x, y, constants), both calls passing x then y, then (3,) and
    (7,)."""
    bb = relax.BlockBuilder()
    x, y = (relax.Var(name, relax.TensorType((8,), "int8")) for name in "xy")
    with bb.function("main", [x, y]):
        with bb.dataflow():
            first = bb.emit_te(_sum_chain(3, swapped=False), x, y, primfunc_name_hint="chain")
            second = bb.emit_te(_sum_chain(7, swapped=True), y, x, primfunc_name_hint="chain")
            out = bb.emit_output(relax.Tuple([first, second]))
        bb.emit_func_output(out)
    mod = share_constant_variants(bb.get())
    calls = [binding.value for block in mod["main"].body.blocks for binding in block.bindings
             if isinstance(binding.value, relax.Call) and binding.value.op.same_as(tvm.ir.Op.get("relax.call_tir"))]
    assert len({call.args[0].name_hint for call in calls}) == 1
    assert [[operand.same_as(var) for operand, var in zip(call.args[1].fields, (x, y))] for call in calls] == \
        [[True, True], [True, True]]
    assert [list(call.args[1].fields[2].value.numpy()) for call in calls] == [[3], [7]]


def test_offsets_left_out_are_zero() -> None:
    """Before: x * 3 + 5 and x * 7 (its offset 0, which the lowering leaves out), each in a chain. Expected: one
    template, one group whose slots are the scale and the offset, (3, 5) and (7, 0)."""
    funcs = {f"k{i}": te.create_prim_func(_as_tensors(kernel)) for i, kernel in enumerate([_chain(3, 5), _chain(7, 0)])}
    assert 'T.Cast("int32", x[v_i]) * 7, 9)' in funcs["k1"].script()  # no "+ 0": the forms differ
    groups = constant_groups(funcs)
    assert [(g.names, g.values) for g in groups] == [(("k0", "k1"), {"k0": (3, 5), "k1": (7, 0)})]


def test_operands_named_by_position_keep_their_order() -> None:
    """Before: chain(x * 3 + y) of parameters (y, x), once plain and once marked with an SVDF's state operand (an
    attribute naming an operand by its position). Expected: the plain one in first-read order (x, y): (1, 0); the
    marked one as it is: (0, 1)."""
    x, y = (te.placeholder((8,), "int8", name=name) for name in "xy")
    func = te.create_prim_func([y, x, _sum_chain(3, swapped=True)(y, x)])
    assert in_first_read_order(func, 2)[1] == (1, 0)
    assert in_first_read_order(func.with_attr(STATE_OPERAND_ATTR, 0), 2)[1] == (0, 1)


def test_small_kernels_are_not_shared() -> None:
    """Kernels whose code is smaller than the arrays and arguments their calls would carry (two kernels of one
    loop of x * scale, each called twice) stay one kernel each."""
    def tiny(scale: int):
        return lambda x: te.compute(x.shape, lambda i: x[i].astype("int32") * scale, name="tiny")

    mod = share_constant_variants(_module([tiny(3), tiny(7), tiny(3), tiny(7)]))
    assert [name for name, _ in _called(mod)] == ["chain", "chain1", "chain", "chain1"]


def test_code_estimate_is_the_cores() -> None:
    """A kernel's code is estimated for the bundle's core (its backend's `KernelSchedules.kernel_code`): the same
    kernels are shared for a core whose code is larger a node (rv32imc's 3 B against Thumb-2's 2 B: the ViT layer
    norms), their estimate its bytes a node."""
    def tiny(scale: int):
        return lambda x: te.compute(x.shape, lambda i: x[i].astype("int32") * scale, name="tiny")

    func = _module([tiny(3)])["chain"]
    assert kernel_bytes(func, RV32C_KERNEL_CODE) > kernel_bytes(func) == kernel_bytes(func, THUMB2_KERNEL_CODE)
    mod = share_constant_variants(_module([tiny(3), tiny(7), tiny(3), tiny(7)]), KernelCode(bytes_per_node=40))
    assert [name for name, _ in _called(mod)] == ["chain"] * 4


def test_unrolled_gru_steps_share_kernels(compiled) -> None:
    """End to end: the zoo's GRU keyword model (its 40 unrolled steps) on rv32imc calls fewer gate kernels than it has
    steps, a shared one with each call's constants, and its self-test passes (bit-exact with TFLite). Its first
    step's gate kernel, called once, calls the out-of-line biased requantization; the shared one, called 39 times,
    keeps it inlined (backends/riscv/schedules/cold_requantize.py)."""
    bundle = compiled("zoo/kws_gru_40x16_int8.tflite", "rv32imc")
    assert bundle.selftest is not None and bundle.selftest.passed
    gates = Counter(call.kernel for call in bundle.plan.calls if "logistic" in call.kernel)
    assert sum(gates.values()) >= 40 and len(gates) < sum(gates.values())
    shared = [name for name, calls in gates.items() if calls > 1]
    kernels = (bundle.out_dir / "kws_gru_40x16_int8_kernels.c").read_text()
    signatures = [line for line in kernels.splitlines() if line.startswith("void ")]
    assert shared and all(any(line.startswith(f"void {name}(") and "const int32_t* constants" in line
                              for line in signatures) for name in shared)
    bodies = {name: kernels[kernels.index(f"void {name}("):].split("\n}\n", 1)[0] for name in gates}
    assert sorted(gates.values()) == [1, 39], gates
    assert all(("_requantize_biased_s8_call(" in bodies[name]) == (calls == 1) for name, calls in gates.items())


def test_constant_loads_weigh_against_the_code_saved() -> None:
    """Two kernels of 200 B, one slot, a call each: shared at 24 loads of the constant a call (a GRU gate's loop),
    not at 100,000 (a loop over a large tensor: more instructions than the code saved is worth)."""
    group = Group(("a", "b"), {0: 0}, {"a": (1,), "b": (2,)})
    assert group.pays(200, 24, calls=2)
    assert not group.pays(200, 100_000, calls=2)


def test_every_call_pays_its_argument() -> None:
    """Two kernels of 40 B, one slot: shared where each is called once (40 B saved against two arrays and two
    arguments), not where each is called ten times (twenty calls' arguments weigh more than one kernel)."""
    group = Group(("a", "b"), {0: 0}, {"a": (1,), "b": (2,)})
    assert group.pays(40, 1, calls=2)
    assert not group.pays(40, 1, calls=20)


def test_constant_loads_count_loop_iterations() -> None:
    """x * c[0] + c[1] over 8 elements: 16 loads a call."""
    x = te.placeholder((8,), "int8", name="x")
    constants = te.placeholder((2,), "int32", name=CONSTANTS_ROLE)
    out = te.compute((8,), lambda i: x[i].astype("int32") * constants[0] + constants[1], name="out")
    assert constant_loads(te.create_prim_func([x, constants, out])) == 16


def _scaled_sum(scales: tuple[int, ...]):
    """A TE kernel of int8 x over 8 elements: the sum of (x * scale) >> (k + 1) for the k-th of `scales` (an
    immediate each)."""
    def kernel(x: te.Tensor) -> te.Tensor:
        def value(i):
            terms = [(x[i].astype("int32") * scale) >> (k + 1) for k, scale in enumerate(scales)]
            return functools.reduce(lambda a, b: a + b, terms)
        return te.compute(x.shape, value, name="chain")
    return kernel


def _loaded_at_entry(mod: tvm.IRModule) -> int:
    """The constants the one shared kernel of `mod` loads once at its entry (its values bound to a load of them)."""
    name = _called(mod)[0][0]
    return sum(1 for node in walk(mod[name].body) if isinstance(node, tirx.Bind)
               and isinstance(node.value, tvm.ir.TensorLoad) and node.value.source.name == CONSTANTS_ROLE)


def test_constants_at_entry_where_the_loop_holds_them() -> None:
    """Two kernels differing in 2 scales, then in 11 (x * s0 + x * s1 + ..., 8 elements). Expected: on a core of 12
    registers for a loop's values (Thumb-2 with the DSP extension) the 2 constants load once at the shared kernel's
    entry, beside the loop's pointers to x and the output and its counter (5 held across the loop); the 11
    (14 held) load where used: gcc spilled constants held beyond its registers (kws_gru_40x16's GRU gate chain on
    cortex-m55: 33 constants in one loop, more code and more instructions at entry). A core of no such registers
    (0) loads them where used."""
    code = KernelCode(bytes_per_node=40, registers=12)
    two = share_constant_variants(_module([_scaled_sum((3, 5)), _scaled_sum((7, 9))]), code)
    assert _loaded_at_entry(two) == 2
    assert constants_across_loops(two[_called(two)[0][0]]) == 5
    scales = tuple(range(3, 14))
    many = share_constant_variants(_module([_scaled_sum(scales), _scaled_sum(tuple(s + 20 for s in scales))]), code)
    assert len({name for name, _ in _called(many)}) == 1 and _loaded_at_entry(many) == 0
    assert constants_across_loops(
        share_constant_variants(_module([_scaled_sum(scales), _scaled_sum(tuple(s + 20 for s in scales))]),
                                KernelCode(bytes_per_node=40, registers=100))["chain"]) == 14
    assert _loaded_at_entry(share_constant_variants(_module([_scaled_sum((3, 5)), _scaled_sum((7, 9))]),
                                                    KernelCode(bytes_per_node=40))) == 0


def _tiles_call(zero_point: int, channels: int = 4):
    """A TE kernel of one call of the fused channel tiles' op (``conv_tiles_s8``: out, x, w, bias, multiplier,
    shift, then the input's zero point and the window's sizes) over 16 int8 inputs, `channels` outputs."""
    from backends.cortex_m.schedules.conv_tiles import CONV_TILES_OPS
    from tvm_ext.tir.extern_stage import element_address, extern_from_zero

    def kernel(x: te.Tensor, w: te.Tensor, bias: te.Tensor, multiplier: te.Tensor, shift: te.Tensor) -> te.Tensor:
        def build(ins, outs):
            zero = tirx.const(0, "int32")
            addresses = [element_address(buffer, zero) for buffer in (outs[0], *ins)]
            return tirx.Evaluate(tirx.call_intrin("int32", CONV_TILES_OPS["int32"], *addresses, zero_point, 0, 16, 1,
                                                  16, channels))
        return extern_from_zero([channels], [x, w, bias, multiplier, shift], build, "tiles")
    return kernel


def _tiles_module(calls) -> tvm.IRModule:
    """main(x) calling one fused tiles kernel per (zero point, channels) of `calls` on x with its own constants."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((16,), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            results = []
            for zero_point, channels in calls:
                constants = [relax.const(np.full(shape, 1, dtype)) for shape, dtype in (
                    ((channels * 16,), "int8"), ((channels,), "int32"), ((channels,), "int32"), ((channels,), "int8"))]
                results.append(bb.emit_te(_tiles_call(zero_point, channels), x, *constants,
                                          primfunc_name_hint="fully_connected"))
            out = bb.emit_output(relax.Tuple(results))
        bb.emit_func_output(out)
    return bb.get()


def test_helper_calls_share_their_value_arguments() -> None:
    """Before: three fused tiles kernels of one window, their input zero points 3, -4 and 9 (a helper call's value
    argument: neither an address nor a size its access reads). Expected: one kernel, each call passing its zero
    point in `constants`; the window's sizes stay immediates."""
    mod = share_constant_variants(_tiles_module([(3, 4), (-4, 4), (9, 4)]))
    calls = _called(mod)
    assert len({name for name, _ in calls}) == 1
    assert [list(operand.value.numpy()) for _, operand in calls] == [[3], [-4], [9]]
    [call] = [n for n in walk(mod[calls[0][0]].body) if isinstance(n, tvm.ir.Call) and n.op.name.endswith("s8")]
    assert isinstance(call.args[6], tvm.ir.TensorLoad) and call.args[6].source.name == CONSTANTS_ROLE
    assert [int(arg) for arg in call.args[7:]] == [0, 16, 1, 16, 4]


def test_helper_call_sizes_stay_immediates() -> None:
    """Before: two fused tiles kernels of one zero point, 4 and 8 channels (a size the helper's access reads).
    Expected: no group: sizes are the kernels' own."""
    funcs = {f"k{i}": te.create_prim_func([*inputs, _tiles_call(3, channels)(*inputs)])
             for i, channels in enumerate((4, 8))
             for inputs in [[te.placeholder(shape, dtype) for shape, dtype in (
                 ((16,), "int8"), ((channels * 16,), "int8"), ((channels,), "int32"), ((channels,), "int32"),
                 ((channels,), "int8"))]]}
    assert constant_groups(funcs) == []


def _choice_of_every_kernel(mod: tvm.IRModule) -> tuple[dict, dict]:
    """tvm_ext.lower.bundle_choice of ``mod`` with a backend's choice that picks every kernel it is shown: (the
    choice per kernel, the calls of each kernel it was shown)."""
    from backends.backend import BundleChoice
    from tvm_ext.lower import bundle_choice

    shown = {}

    def choose(kernels, calls):
        shown.update({name: calls[name] for name in kernels})
        return BundleChoice({name: f"choice of {name}" for name in kernels})

    return bundle_choice(choose, mod), shown


def _three_kernels() -> tuple[tvm.IRModule, list[str]]:
    """main calling chain(x * 3 + 5), chain(x * 7 - 2) and x + 1, and their kernels' names in call order."""
    mod = _module([_chain(3, 5), _chain(7, -2, subtract=True), lambda x: te.compute(x.shape, lambda i: x[i] + 1)])
    return mod, [name for name, _ in _called(mod)]


def test_bundle_choices_see_a_shared_group_as_one_kernel() -> None:
    """Before: main calls chain(x * 3 + 5), chain(x * 7 - 2) (one shared group) and a third kernel of its own. A
    backend's bundle choice (tvm_ext.lower.bundle_choice) that picks every kernel it is shown. Expected: it is
    shown the group's first kernel, called twice, and the other kernel; both members take the first's choice."""
    mod, names = _three_kernels()
    choice, shown = _choice_of_every_kernel(mod)
    assert choice == {names[0]: f"choice of {names[0]}", names[1]: f"choice of {names[0]}",
                      names[2]: f"choice of {names[2]}"}
    assert shown == {names[0]: 2, names[2]: 1}


def _runs_of(op: str, value: int, tiles: bool = False) -> tirx.PrimFunc:
    """A kernel of a loop of two calls of `op`, each on its own run: the Helium ADD's (out, a, b, count 8, then the
    value argument `value`) or, with `tiles`, the fused channel tiles' (out, x, w, bias, multiplier, shift, then the
    input's zero point `value` and the window's sizes: 16 inputs, 4 channels a pixel)."""
    from tvm_ext.tir.extern_stage import element_address, extern_from_zero

    shapes = [(32,), (64,), (4,), (4,), (4,)] if tiles else [(16,), (16,)]
    inputs = [te.placeholder(shape, "int32" if k in (2, 3) and tiles else "int8", name=f"in{k}")
              for k, shape in enumerate(shapes)]

    def build(ins, outs):
        run = tirx.Var("r", "int32")
        if tiles:
            addresses = [element_address(outs[0], run * 4), element_address(ins[0], run * 16),
                         *(element_address(buffer, tirx.const(0, "int32")) for buffer in ins[1:])]
            call = tirx.call_intrin("int32", op, *addresses, value, 0, 16, 1, 16, 4)
        else:
            call = tirx.call_intrin("int32", op, *(element_address(buffer, run * 8) for buffer in (outs[0], *ins)), 8,
                                    value)
        return tirx.For(run, 0, 2, tirx.ForKind.SERIAL, tirx.Evaluate(call))

    return te.create_prim_func([*inputs, extern_from_zero([8 if tiles else 16], inputs, build, "runs")])


def test_an_out_of_line_helpers_calls_in_a_loop_share_their_value_arguments() -> None:
    """Before: two kernels each a loop over two runs calling the Helium ADD's run helper, their value argument 3 and
    -4; two likewise calling the fused channel tiles, inlined where called, their zero point 3 and -4. Expected: the
    ADD's kernels one group (its one out-of-line copy, `helper_access.is_out_of_line`: nothing specialized on the
    value), the tiles' kernels none (inside a loop the inlined helper would lose its constant)."""
    from backends.cortex_m.schedules.conv_tiles import CONV_TILES_OPS
    from backends.cortex_m.schedules.helium_add import ADD_S8_OP

    adds = constant_groups({f"add{k}": _runs_of(ADD_S8_OP, value) for k, value in enumerate((3, -4))})
    assert [group.names for group in adds] == [("add0", "add1")]
    assert constant_groups({f"tiles{k}": _runs_of(CONV_TILES_OPS["int32"], value, tiles=True)
                            for k, value in enumerate((3, -4))}) == []
