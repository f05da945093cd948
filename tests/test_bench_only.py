"""The benchmarks' `--only` (scripts/model_selection.py, used by bench_speed.py and bench_memory.py): model stems
apart or joined by commas select the same models; a stem no model has is one line."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("model_selection", REPO / "scripts" / "model_selection.py")
model_selection = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model_selection)


@pytest.fixture
def models(tmp_path: Path) -> Path:
    for name in ("a/kws.tflite", "a/vww.tflite", "b/ad.tflite", "b/ad.onnx"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def _selected(models: Path, *argv: str) -> list[str]:
    parser = argparse.ArgumentParser()
    model_selection.add_only_option(parser)
    return [m.stem for m in model_selection.selected_models(models, parser.parse_args(argv).only)]


@pytest.mark.parametrize("argv", [("--only", "kws", "ad"), ("--only", "kws,ad"), ("--only", "ad,", "kws")])
def test_names_apart_or_joined_by_commas_select_the_same_models(models: Path, argv: tuple[str, ...]) -> None:
    assert _selected(models, *argv) == ["kws", "ad"]  # in path order


def test_without_only_every_tflite_model_runs(models: Path) -> None:
    assert _selected(models) == ["kws", "vww", "ad"]  # in path order, the .onnx left out


@pytest.mark.parametrize("value", [",", "", ",,"])
def test_an_only_that_names_no_model_is_one_line_not_every_model(models: Path, value: str) -> None:
    with pytest.raises(ValueError, match=r"^--only: .* names no model$"):
        _selected(models, "--only", value)


def test_a_name_no_model_has_is_one_line(models: Path) -> None:
    with pytest.raises(ValueError, match=r"^--only: no model nope, zzz under .*$"):
        _selected(models, "--only", "kws", "zzz,nope")
