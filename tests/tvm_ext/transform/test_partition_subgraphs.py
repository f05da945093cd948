"""PartitionSubgraphs: main's bindings split where one value crosses, grouped by the profile's subgraph_bytes;
and the split reaching the plan and manifest.json of a compiled bundle."""

from __future__ import annotations

import dataclasses
import json

import pytest

import tvm
from tvm import relax, te, topi

import target
from tvm_ext.layers import BINDING_SUBGRAPHS_ATTR
from tvm_ext.transform import PartitionSubgraphs
from tvm_ext.transform.partition_subgraphs import partition_subgraphs

TENSOR_BYTES = 64  # every tensor of the modules below: 64 int8 elements


def lowpower(subgraph_bytes: int) -> target.Profile:
    return dataclasses.replace(target.resolve_profile("lowpower"), subgraph_bytes=subgraph_bytes)


def before() -> tvm.IRModule:
    """x -> a = relu(x) -> b = a + 1 -> c = a + b (a residual join) -> d = relu(c) -> e = relu(d):
    each a call_tir of its own kernel, as after our passes."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, TENSOR_BYTES), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit_te(topi.nn.relu, x)
            b = bb.emit_te(lambda t: te.compute(t.shape, lambda *i: t(*i) + tvm.tirx.const(1, "int8")), a)
            c = bb.emit_te(topi.add, a, b)
            d = bb.emit_te(topi.nn.relu, c)
            e = bb.emit_te(topi.nn.relu, d)
            out = bb.emit_output(e)
        bb.emit_func_output(out)
    return bb.get()


def expected(ids: list[int]) -> tvm.IRModule:
    """`before()` with main carrying the subgraph of each of its six bindings (a, b, c, d, e, out)."""
    mod = before()
    mod["main"] = mod["main"].with_attr(BINDING_SUBGRAPHS_ATTR, ids)
    return mod


@pytest.mark.parametrize("subgraph_bytes, ids", [
    # Everything fits: one subgraph.
    (1 << 20, [0, 0, 0, 0, 0, 0]),
    # Nothing fits two pieces: a cut at every single-entry point (before b, d and e), never between b and c
    # (a and b both cross there: the residual join stays whole); the output alias joins e's subgraph.
    (1, [0, 1, 1, 2, 3, 3]),
    # {x, a} + {a, b, c} is 4 tensors (256 B): one subgraph; then {c, d} + {d, e} (192 B).
    (4 * TENSOR_BYTES, [0, 0, 0, 1, 1, 1]),
    # One byte less: a alone, then {a, b, c}; {a, b, c, d} is too much again: {c, d, e}.
    (4 * TENSOR_BYTES - 1, [0, 1, 1, 2, 2, 2]),
])
def test_cuts_at_single_entry_points_under_the_profiles_threshold(subgraph_bytes, ids):
    tvm.ir.assert_structural_equal(PartitionSubgraphs(lowpower(subgraph_bytes))(before()), expected(ids))


def test_a_model_input_read_again_later_is_a_second_entry():
    """y = relu(x); z = x + y: cutting before z would give z's subgraph two entries (x and y)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, TENSOR_BYTES), "int8"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_te(topi.nn.relu, x)
            z = bb.emit_te(topi.add, x, y)
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    assert partition_subgraphs(bb.get()["main"], lowpower(1)) == (0, 0, 0)


def test_the_plan_and_the_manifest_record_the_subgraphs(tmp_path):
    """The example model compiled with a small subgraph_bytes: its calls fall into several subgraphs, in
    order, and manifest.json says which call is in which."""
    import tvm_ext
    from tvm_ext.example import EXAMPLE_NAME, write_example_model

    model = write_example_model(tmp_path / f"{EXAMPLE_NAME}.onnx")
    bundle = tvm_ext.compile(model, target=lowpower(2048), out=tmp_path / "out")
    ids = [call.subgraph for call in bundle.plan.calls]
    assert len(set(ids)) > 1 and set(ids) == set(range(len(set(ids)))), ids
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [call["subgraph"] for call in manifest["calls"]] == ids
    assert manifest["profile"]["subgraph_bytes"] == 2048


def test_subgraph_bytes_is_optional_in_a_profile_file_and_checked(tmp_path):
    """A profile file without the field gets DEFAULT_SUBGRAPH_BYTES; one that gives it gets it checked."""
    import tomllib

    from target.loading import BUILTIN_DIR
    from target.profile import DEFAULT_SUBGRAPH_BYTES

    fields = tomllib.loads((BUILTIN_DIR / "lowpower.toml").read_text()) | {"name": "board"}
    for value, expected in ((None, DEFAULT_SUBGRAPH_BYTES), (4096, 4096), (0, None)):
        table = {key: v for key, v in (fields | {"subgraph_bytes": value}).items() if v is not None}
        path = tmp_path / "board.json"
        path.write_text(json.dumps(table))
        if expected is None:
            with pytest.raises(target.ProfileError, match="field 'subgraph_bytes' must be a positive whole number"):
                target.load_profile(path)
        else:
            assert target.load_profile(path).subgraph_bytes == expected
