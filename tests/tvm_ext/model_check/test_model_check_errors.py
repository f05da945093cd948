"""ModelError is one line naming the model; ProblemList lists every problem of a kind, capped; an ONNX graph's
problems are named by their real cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_corpus import if_branch_reading_an_input_onnx, sparse_initializer_onnx

from tvm_ext.model_check import ErrorKind, ModelError, check_model_data
from tvm_ext.model_check.errors import MAX_LISTED_PROBLEMS, ProblemList, layers_phrase, quote


def test_model_error_is_one_line_even_with_newlines_in_names() -> None:
    error = ModelError("m.onnx", ErrorKind.GRAPH, f"node {quote('a' + chr(10) + 'b')} is bad\nsecond line")
    assert str(error) == "m.onnx: node 'a\\nb' is bad\\nsecond line"  # the line breaks shown, not acted on
    assert error.kind is ErrorKind.GRAPH


def test_quote_cuts_long_names_and_decodes_bytes() -> None:
    assert quote("x" * 500) == "'" + "x" * 77 + "...'"
    assert quote(b"\xe6lat") == "'\\xe6lat'"  # the byte that is not UTF-8 shown by its value


def test_problem_list_lists_all_then_counts_the_rest() -> None:
    problems = ProblemList("m.tflite", ErrorKind.INDEX, "index out of range", "see the schema")
    for i in range(MAX_LISTED_PROBLEMS + 3):
        problems.add(f"p{i}")
    with pytest.raises(ModelError) as raised:
        problems.raise_if_any()
    text = str(raised.value)
    assert text.startswith("m.tflite: index out of range: p0; p1; ")
    assert f"p{MAX_LISTED_PROBLEMS - 1}; and 3 more; see the schema" in text
    assert f"p{MAX_LISTED_PROBLEMS};" not in text


def test_problem_list_without_problems_does_not_raise() -> None:
    ProblemList("m.tflite", ErrorKind.INDEX, "index out of range").raise_if_any()


def test_layers_phrase() -> None:
    assert layers_phrase(["a"]) == "layer 'a'"
    assert layers_phrase(["a", "b", "c", "d", "e"]) == "layers 'a', 'b', 'c' and 2 more"


def test_an_input_read_only_by_an_if_branch_is_refused_as_control_flow() -> None:
    """The old check called x "not read by any node": the If's branches read it by its name."""
    with pytest.raises(ModelError) as refused:
        check_model_data(Path("if.onnx"), if_branch_reading_an_input_onnx().SerializeToString())
    assert refused.value.kind is ErrorKind.UNSUPPORTED_OPERATOR
    assert "If (control flow" in str(refused.value) and "not read" not in str(refused.value), str(refused.value)


def test_a_sparse_initializer_is_refused_by_name_as_sparse() -> None:
    """The old check said the Add "reads 'W' that nothing defines"."""
    with pytest.raises(ModelError) as refused:
        check_model_data(Path("sparse.onnx"), sparse_initializer_onnx().SerializeToString())
    assert refused.value.kind is ErrorKind.TENSOR
    assert str(refused.value) == ("sparse.onnx: bad constant: initializer 'W' is a sparse tensor (not supported: "
                                  "store it dense)")
