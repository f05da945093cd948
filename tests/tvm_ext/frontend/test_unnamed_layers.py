"""TFLite models whose tensors have no names (TFLM's keyword_scrambled models) still name every layer, in the
model check's refusals and in the frontend's layer names, by the operator's index: never ''."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import fuzz_corpus
import pytest

from tvm_ext.frontend import import_model
from tvm_ext.model_check import ModelError, check_model


def _unnamed(spec: fuzz_corpus.TinyTflite) -> fuzz_corpus.TinyTflite:
    spec.tensors = [replace(tensor, name="") for tensor in spec.tensors]
    return spec


def _write(tmp_path: Path, spec: fuzz_corpus.TinyTflite) -> Path:
    path = tmp_path / "unnamed.tflite"
    path.write_bytes(fuzz_corpus.build_tflite(spec))
    return path


def test_refused_operator_without_names_is_named_by_its_index(tmp_path: Path) -> None:
    spec = _unnamed(fuzz_corpus.TinyTflite())
    spec.opcodes = [(fuzz_corpus.CUSTOM, 1, "MyVendorOp")]
    with pytest.raises(ModelError) as refused:
        check_model(_write(tmp_path, spec))
    assert "at layer 'operator 0'" in str(refused.value)
    assert "''" not in str(refused.value)


def test_frontend_names_unnamed_layers_by_operator_index(tmp_path: Path) -> None:
    imported = import_model(_write(tmp_path, _unnamed(fuzz_corpus.TinyTflite())))
    assert [record.label for record in imported.layers] == ["operator 0 (FULLY_CONNECTED)"]
