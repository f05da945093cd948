"""extract_plan's refusals name the model's layer, never a Relax variable of ours, and are one PlanError line."""

from __future__ import annotations

from pathlib import Path

import pytest
import tvm
from tvm import relax

from tvm_ext.plan.extract_plan import PlanError, extract_plan
from tvm_ext.frontend import ImportedModel, TensorSpec
from tvm_ext.layers import LayerRecord, with_layers

TENSOR = relax.TensorType([1, 4], "float32")
RECORD = LayerRecord("dense_1/MatMul", "FullyConnected", 0)
LAYER = RECORD.label


def _refusal(value: relax.Expr, model_input: relax.Var) -> str:
    """The PlanError of a `main` whose one binding, labelled LAYER, computes `value`."""
    result = relax.Var("gv", TENSOR)
    body = relax.SeqExpr([relax.DataflowBlock([relax.VarBinding(result, value)])], result)
    main = with_layers(relax.Function([model_input], body, TENSOR), [RECORD], [[0]])
    model = ImportedModel("tiny", Path("tiny.onnx"), "onnx", tvm.IRModule({"main": main}), [RECORD],
                          [TensorSpec("input", (1, 4), "float32")], [TensorSpec("logits", (1, 4), "float32")])
    with pytest.raises(PlanError) as raised:
        extract_plan(model.mod, model, "lowpower", {}, {})
    text = str(raised.value)
    assert "\n" not in text
    return text


def test_unsupported_step_names_the_layer() -> None:
    x = relax.Var("x", TENSOR)
    pair = relax.Var("lv_pair", relax.TupleType([TENSOR, TENSOR]))
    text = _refusal(relax.TupleGetItem(pair, 0), x)
    assert text == f"tiny.onnx: layer '{LAYER}' lowers to an unsupported step TupleGetItem", text


def test_value_used_before_computed_names_the_layer_not_our_variable() -> None:
    x = relax.Var("x", TENSOR)
    never_bound = relax.Var("lv17", TENSOR)
    text = _refusal(relax.op.reshape(never_bound, [1, 4]), x)
    assert f"layer '{LAYER}'" in text and "lv17" not in text, text
