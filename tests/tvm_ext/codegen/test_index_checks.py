"""The code generator's check of data-dependent loads and stores (tvm_ext.codegen.index_checks), on small kernels: an
access positioned by tensor data is refused unless a guard checks the indices, the analysis proves it in
bounds, or the buffer is one of our lookup tables; a guarded kernel checks its indices before it writes."""

from __future__ import annotations

import pytest
from tvm import te
from tvm.script import tirx as T

import target
from tvm_ext.codegen.codegen_c import generate_c
from tvm_ext.codegen.index_checks import UncheckedIndexError
from tvm_ext.layers import CONSTANT_RANGES_ATTR, INDEX_GUARDS_ATTR, NUM_OUTPUTS_ATTR, OPERAND_ROLES_ATTR


@pytest.fixture(scope="module")
def lowpower():
    return target.register_profile_with_tvm(target.resolve_profile("lowpower"))


def _gather():
    data = te.placeholder((10, 4), "float32", "data")
    indices = te.placeholder((3,), "int64", "indices")
    out = te.compute((3, 4), lambda i, j: data[indices[i], j], name="gathered")
    return te.create_prim_func([data, indices, out]).with_attr(NUM_OUTPUTS_ATTR, 1)


def test_an_unguarded_data_dependent_read_is_refused(lowpower):
    with pytest.raises(UncheckedIndexError, match="reads input0 at positions read from input1, which nothing checks"):
        generate_c({"k": _gather()}, lowpower)


def test_a_kernel_with_guarded_indices_checks_them_before_writing(lowpower):
    source = generate_c({"k": _gather().with_attr(INDEX_GUARDS_ATTR, [[1, 1, 0, 10]])}, lowpower)
    assert source.signatures["k"].checks_indices
    text = source.definitions["k"]
    assert text.startswith("int32_t k(const float* input0, const int64_t* input1, float* output0) {")
    check, write = text.index("(int64_t)10"), text.index("output0[")
    assert check < write and "return 1;" in text[:write] and text.rstrip().endswith("return 0;\n}")


def test_indices_checked_at_compile_time_cost_nothing_at_run_time(lowpower):
    source = generate_c({"k": _gather().with_attr(INDEX_GUARDS_ATTR, [[1, 0, 0, 10]])}, lowpower)
    assert not source.signatures["k"].checks_indices and "return" not in source.definitions["k"]


def test_an_int8_table_index_is_proved_in_bounds(lowpower):
    x, table = te.placeholder((16,), "int8", "x"), te.placeholder((256,), "int8", "table")
    out = te.compute((16,), lambda i: table[x[i].astype("int32") + 128], name="lookup")
    source = generate_c({"k": te.create_prim_func([x, table, out]).with_attr(NUM_OUTPUTS_ATTR, 1)}, lowpower)
    assert not source.signatures["k"].checks_indices


def test_a_table_one_entry_short_is_refused(lowpower):
    x, table = te.placeholder((16,), "int8", "x"), te.placeholder((255,), "int8", "table")
    out = te.compute((16,), lambda i: table[x[i].astype("int32") + 128], name="lookup")
    with pytest.raises(UncheckedIndexError):
        generate_c({"k": te.create_prim_func([x, table, out]).with_attr(NUM_OUTPUTS_ATTR, 1)}, lowpower)


def test_a_clamped_index_and_a_read_under_its_bounds_test_are_proved(lowpower):
    data, indices = te.placeholder((10,), "float32", "data"), te.placeholder((3,), "int32", "indices")
    clamped = te.compute((3,), lambda i: data[te.min(te.max(indices[i], 0), 9)], name="clamped")
    tested = te.compute((3,), lambda i: te.if_then_else(te.all(indices[i] >= 0, indices[i] < 10),
                                                         data[indices[i]], 0.0), name="tested")
    kernels = {name: te.create_prim_func([data, indices, out]).with_attr(NUM_OUTPUTS_ATTR, 1)
               for name, out in (("clamped", clamped), ("tested", tested))}
    generate_c(kernels, lowpower)


def test_a_position_from_a_constant_operand_is_proved_with_its_values(lowpower):
    """int8 RESIZE_NEAREST_NEIGHBOR reads its source at rows and columns from compile-time tables."""
    kernel = _gather().with_attr(OPERAND_ROLES_ATTR, ["", "rows"])
    generate_c({"k": kernel.with_attr(CONSTANT_RANGES_ATTR, [[1, 0, 9]])}, lowpower)
    with pytest.raises(UncheckedIndexError):
        generate_c({"k": kernel.with_attr(CONSTANT_RANGES_ATTR, [[1, 0, 10]])}, lowpower)


def test_a_lookup_table_of_ours_is_trusted(lowpower):
    """int8 softmax's `exp_table[row_max - x]` is in bounds by the kernel's arithmetic, not by the analysis."""
    x, table = te.placeholder((16,), "int8", "x"), te.placeholder((256,), "int32", "exp_table")
    out = te.compute((16,), lambda i: table[x[0].astype("int32") - x[i].astype("int32")], name="exp")
    kernel = te.create_prim_func([x, table, out]).with_attr(NUM_OUTPUTS_ATTR, 1)
    with pytest.raises(UncheckedIndexError):
        generate_c({"k": kernel}, lowpower)
    generate_c({"k": kernel.with_attr(OPERAND_ROLES_ATTR, ["", "exp_table"])}, lowpower)


def test_positions_copied_into_a_local_buffer_keep_their_guard(lowpower):
    @T.prim_func
    def _through_a_local_buffer(data: T.Buffer((10,), "float32"), idx: T.Buffer((3,), "int32"),
                                out: T.Buffer((3,), "float32")):
        positions = T.alloc_buffer((3,), "int32")
        for i in range(3):
            positions[i] = idx[i]
        for i in range(3):
            out[i] = data[positions[i]]

    kernel = _through_a_local_buffer.with_attr(NUM_OUTPUTS_ATTR, 1)
    with pytest.raises(UncheckedIndexError, match="positions read from input1"):
        generate_c({"k": kernel}, lowpower)
    assert generate_c({"k": kernel.with_attr(INDEX_GUARDS_ATTR, [[1, 1, 0, 10]])}, lowpower).signatures["k"].checks_indices


def test_positions_a_call_writes_are_not_covered_by_any_guard(lowpower):
    @T.prim_func
    def _through_a_helper(data: T.Buffer((10,), "float32"), idx: T.Buffer((3,), "int32"),
                          out: T.Buffer((3,), "float32")):
        positions = T.alloc_buffer((3,), "int32")
        for i in range(3):
            positions[i] = 0
        T.evaluate(T.call_extern("int32", "fill_positions", T.address_of(positions[0])))
        for i in range(3):
            out[i] = data[positions[i]]

    kernel = _through_a_helper.with_attr(NUM_OUTPUTS_ATTR, 1).with_attr(INDEX_GUARDS_ATTR, [[1, 1, 0, 10]])
    with pytest.raises(UncheckedIndexError, match="values the kernel does not store itself"):
        generate_c({"k": kernel}, lowpower)
