"""The real models pass the check, with the facts an independent source states; kws_ref_model_float32 is
refused as hybrid. ONNX: the backend test models of the onnx wheel pass with the input and output shapes of
the test tensors shipped beside them, or are refused for a reason we name."""

from __future__ import annotations

import re
from pathlib import Path

import fuzz_corpus
import onnx
import pytest

from conftest import models_dir
from tvm_ext.model_check import ErrorKind, ModelError, ModelFormat, check_model

MODELS = models_dir()  # raises when the shared models are missing: they are never optional
HYBRID_MODEL = "kws_ref_model_float32.tflite"
README_DTYPES = {"f32": "float32", "i8": "int8", "i16": "int16", "i32": "int32"}
# A README input cell: "1x49x10x1 i8", "2 x 1x128x128x1 i8" (two inputs alike), "1x96 i16 -> 1x2 i32", with a
# remark in parentheses after it.
README_INPUT = re.compile(r"(?:(\d+) x )?([\dx]+) (f32|i8|i16|i32)\b.*")


def readme_inputs() -> dict[str, list[tuple[tuple[int, ...], str]]]:
    """model file name -> [(input shape, dtype), ...] from the table in the models' README."""
    table = {}
    for line in (MODELS / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        match = README_INPUT.fullmatch(cells[3]) if len(cells) > 4 else None
        if match:
            count, dims, dtype = match.groups()
            shape = tuple(int(d) for d in dims.split("x"))
            table[Path(cells[1]).name] = [(shape, README_DTYPES[dtype])] * int(count or 1)
    return table


TFLITE_MODELS = fuzz_corpus.shared_tflite_models()


@pytest.mark.parametrize("path", [p for p in TFLITE_MODELS if p.name != HYBRID_MODEL], ids=lambda p: p.name)
def test_shared_tflite_model_passes_with_readme_facts(path: Path) -> None:
    facts = check_model(path)
    assert facts.format is ModelFormat.TFLITE
    assert facts.inputs and len(facts.outputs) == 1 and facts.operators
    expected = readme_inputs().get(path.name)
    if expected is not None:  # str_ww_ref_model's README row says "see model"
        assert [(tensor.shape, tensor.dtype) for tensor in facts.inputs] == expected
        assert facts.quantized == (expected[0][1] != "float32")


def test_readme_table_covers_the_models() -> None:
    assert len(readme_inputs()) >= 10


def test_hybrid_model_is_refused_naming_model_and_operator() -> None:
    with pytest.raises(ModelError) as raised:
        check_model(MODELS / "mlperf_tiny" / HYBRID_MODEL)
    text = str(raised.value)
    assert raised.value.kind is ErrorKind.HYBRID
    assert "\n" not in text
    assert text.startswith(
        f"{HYBRID_MODEL}: hybrid (dynamic-range quantized) model: operator CONV_2D at layer"
    )
    assert "has float input and int8 weights" in text and text.endswith("; not supported")


ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
ONNX_MODELS = sorted(
    path
    for kind in ("light", "pytorch-converted", "pytorch-operator", "simple")
    for path in (ONNX_DATA / kind).glob("*/model.onnx")
)
# Why some backend test models are refused: dynamic shapes, string tensors, sequences, training ops.
ONNX_REFUSAL_KINDS = {ErrorKind.TENSOR, ErrorKind.UNSUPPORTED_OPERATOR}


def shipped_tensors(model_dir: Path, prefix: str) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) of the test tensors shipped with a backend test model (input_0.pb, ...)."""
    tensors = []
    for pb in sorted(
        (model_dir / "test_data_set_0").glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1])
    ):
        tensor = onnx.TensorProto.FromString(pb.read_bytes())
        tensors.append((tuple(tensor.dims), onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).name))
    return tensors


def test_onnx_backend_models_pass_with_shipped_shapes() -> None:
    passed, mismatched, refused = 0, [], []
    for path in ONNX_MODELS:
        try:
            facts = check_model(path)
        except ModelError as error:
            refused.append((path.parent.name, error))
            continue
        passed += 1
        declared = [(t.shape, t.dtype) for t in facts.inputs], [(t.shape, t.dtype) for t in facts.outputs]
        shipped = shipped_tensors(path.parent, "input"), shipped_tensors(path.parent, "output")
        if declared != shipped:
            mismatched.append((path.parent.name, declared, shipped))
    assert not mismatched
    assert passed >= 120, f"only {passed} of {len(ONNX_MODELS)} passed"
    assert all(error.kind in ONNX_REFUSAL_KINDS for _, error in refused), refused
