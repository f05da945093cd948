"""tvm_ext.codegen.codegen_c edits no C text (issue 14, item 5): what TVM's printer would print badly is fixed in the
TIR before code generation, the text around the kernel bodies is written from the KernelSignatures, and the
one step that reads TVM's text (`kernel_bodies`) only cuts the bodies out of it."""

from __future__ import annotations

import subprocess

import pytest
import tvm
from tvm import te, tirx

from c_checks import STRICT_WARNINGS
from packager.fixed_point_c import EXPF, requantize_helpers_c
from tvm_ext.codegen import codegen_c
from tvm_ext.codegen.codegen_c import generate_c, kernel_bodies
from tvm_ext.layers import NUM_OUTPUTS_ATTR
from tvm_ext.tir.tir_walk import UnknownTirNode, map_leaves, walk

INT32_MIN = -(2**31)
TARGET = tvm.target.Target({"kind": "c"})


def _kernel(inputs: list, output) -> tirx.PrimFunc:
    return te.create_prim_func([*inputs, output]).with_attr(NUM_OUTPUTS_ATTR, 1)


def _strict_build(tmp_path, c_text: str, helpers_c: str = "") -> None:
    """`c_text` compiles with gcc under the bundle's warning bar (CalledProcessError with gcc's messages), after
    ``helpers_c`` (the bundle helpers its kernels call, as a bundle's internal header defines them)."""
    source = tmp_path / "kernels.c"
    source.write_text(("#include <stdint.h>\n" + helpers_c + "\n" if helpers_c else "") + c_text)
    subprocess.run(["gcc", "-std=c99", "-c", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), str(source),
                    "-o", str(tmp_path / "kernels.o")], check=True, capture_output=True, text=True)


def test_codegen_c_has_no_text_rewriting():
    """The old module regex-edited TVM's C (INT32_MIN, definition lines, declarations, offsets, (void))."""
    assert not hasattr(codegen_c, "re")
    assert not [name for name in vars(codegen_c) if name.startswith("_clean") or name.startswith("_without_unused")]


def test_kernels_c_is_includes_and_definitions_only(tmp_path):
    """No TVM prologue and no forward declaration (TVM declared `expf` once per kernel calling it); the kernels
    call the bundle's own expf (`t_expf`, packager/templates/float_math_expf.h.in), which the source lists."""
    x = te.placeholder((4,), "float32", name="x")
    kernels = {f"t_exp_{k}": _kernel([x], te.compute((4,), lambda i: te.exp(x[i]), name="y")) for k in "ab"}
    source = generate_c(kernels, TARGET, "t")
    text = source.c_text
    top_level = [line for line in text.splitlines() if line and not line.startswith(" ")]
    assert top_level == ["#include <stdint.h>", "#include <math.h>", "#include <stdbool.h>",
                         "void t_exp_a(const float* input0, float* output0) {", "}",
                         "void t_exp_b(const float* input0, float* output0) {", "}"]
    assert source.requantize_roundings == (EXPF,) and "t_expf(" in text and " expf(" not in text
    _strict_build(tmp_path, text, requantize_helpers_c("t", source.requantize_roundings))


def test_int32_min_is_spelled_in_the_tir_so_c_types_it_int(tmp_path):
    x = te.placeholder((6,), "int32", name="x")
    floor = te.compute((6,), lambda i: tirx.Select(x[i] < -5, tirx.const(INT32_MIN, "int32"), x[i]), name="y")
    text = generate_c({"t_floor": _kernel([x], floor)}, TARGET, "t").c_text
    assert "(-2147483647 - 1)" in text and "2147483648" not in text
    _strict_build(tmp_path, text)


def test_zero_offsets_are_not_left_bound_in_the_tir():
    """A TE extern stage leaves its buffers' offsets symbolic; plain_c_signature binds them to 0 and, once the
    simplifier folded their uses, no Bind of them is left (TVM printed each as an unused local)."""
    x = te.placeholder((4,), "int32", name="x")
    copy = te.extern((4,), [x], lambda ins, outs: tirx.BufferStore(outs[0], tirx.BufferLoad(ins[0], [1]), [2]),
                     name="copy", dtype="int32")
    mod = tvm.IRModule({"copy": _kernel([x], copy).with_attr("global_symbol", "copy")})
    lowered = codegen_c._lowering_passes()(tirx.transform.BindTarget(TARGET)(mod))
    assert not [node for node in walk(lowered["copy"].body) if isinstance(node, tirx.Bind)]
    assert "elem_offset" not in generate_c({"copy": _kernel([x], copy)}, TARGET, "t").c_text


def test_an_unread_parameter_is_found_in_the_tir_and_voided(tmp_path):
    """`x * 0` folds away: the kernel still takes `x`, and says so once, before its body."""
    x = te.placeholder((4,), "int32", name="x")
    y = te.placeholder((4,), "int32", name="y")
    kernel = _kernel([x, y], te.compute((4,), lambda i: x[i] * 0 + y[i], name="z"))
    text = generate_c({"k": kernel}, TARGET, "t").c_text
    assert text.count("(void)") == 1
    assert "void k(const int32_t* input0, const int32_t* input1, int32_t* output0) {\n  (void)input0;\n" in text
    _strict_build(tmp_path, text)


def test_kernel_bodies_takes_each_definition_and_refuses_a_missing_one():
    text = ('#include "tvm/runtime/base.h"\nTVM_DLL void a(int8_t* p);\n#ifdef __cplusplus\nextern "C"\n#endif\n'
            "TVM_DLL void a(int8_t* p) {\n  p[0] = (int8_t)1;\n  {\n  }\n}\n\n")
    assert kernel_bodies(text, {"a"}) == {"a": "  p[0] = (int8_t)1;\n  {\n  }\n"}
    with pytest.raises(RuntimeError, match="no definition of the kernels b"):
        kernel_bodies(text, {"a", "b"})


def test_map_leaves_rebuilds_only_where_a_leaf_changed():
    n, m = tirx.Var("n", "int32"), tirx.Var("m", "int32")
    buf = tirx.decl_buffer((8,), "int32", name="buf")
    tree = tirx.For(n, 0, 8, tirx.ForKind.SERIAL, tirx.SeqStmt([
        tirx.BufferStore(buf, tirx.Select(n < 4, tirx.BufferLoad(buf, [n]) * 2, tirx.Cast("int32", n)), [n]),
        tirx.IfThenElse(tirx.Not(n < 1), tirx.Bind(tirx.Var("b", "int32"), n + 1), None)]))
    assert map_leaves(tree, lambda leaf: leaf).same_as(tree)
    renamed = map_leaves(tree, lambda leaf: m if leaf.same_as(n) else leaf)
    assert n not in set(walk(renamed)) and m in set(walk(renamed))
    tvm.ir.assert_structural_equal(renamed.body.seq[1].then_case.value, m + 1)
    with pytest.raises(UnknownTirNode, match="AssertStmt"):
        map_leaves(tirx.AssertStmt(n > 0, tvm.ir.StringImm("RuntimeError"), []),
                   lambda leaf: m if leaf.same_as(n) else leaf)


def test_only_binds_of_constants_nothing_reads_are_dropped():
    unread, read, computed = tirx.Var("unread", "int32"), tirx.Var("read", "int32"), tirx.Var("computed", "int32")
    out = tirx.decl_buffer((1,), "int32", name="out")
    body = tirx.SeqStmt([tirx.Bind(unread, 0), tirx.Bind(read, 5), tirx.Bind(computed, read * 2),
                         tirx.BufferStore(out, read + 1, [0])])
    func = tirx.PrimFunc([out], body)
    kept = codegen_c.drop_unread_constant_binds(tvm.IRModule({"f": func}))["f"].body
    assert [stmt.var.name for stmt in kept.seq if isinstance(stmt, tirx.Bind)] == ["read", "computed"]
