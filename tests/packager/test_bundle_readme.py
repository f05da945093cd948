"""Every bundle's README.md (issue 32, item 7): its usage example (quantize the input, run, dequantize, argmax)
compiles warning-free against the bundle and runs, for float, int8, int16, several-input and in-arena I/O; its
memory figures are the manifest's; text from the model reaches it escaped for Markdown."""

from __future__ import annotations

import json
import math

import pytest

from conftest import example_model
from hostile_names import MARKUP_NAMES, relu_onnx
from printable import printable
from readme_examples import example_runs
from tvm_ext.compile import compile


@pytest.mark.parametrize("model", [example_model, "tflm/person_detect.tflite", "tflm/simple_add_model.tflite",
                                   "tflm/keyword_scrambled_8bit.tflite"])
def test_the_readmes_example_compiles_and_runs_and_its_figures_are_the_manifests(compiled, tmp_path, model):
    bundle = compiled(model)
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    output0 = next(tensor for tensor in manifest["tensors"] if tensor["name"] == manifest["outputs"][0])
    assert 0 <= example_runs(bundle.out_dir, tmp_path) < math.prod(output0["shape"])
    readme = (bundle.out_dir / "README.md").read_text()
    assert f"| arena (activations and scratch, RAM) | {manifest['arena']['bytes']:,} |" in readme
    assert f"| weights (const, flash) | {manifest['weight_bytes']:,} |" in readme
    assert "add_subdirectory(" in readme and "make lib" in readme


def test_the_readmes_example_reads_and_writes_in_the_arena(tmp_path):
    bundle = compile(example_model(tmp_path), "lowpower", tmp_path / "out", io_in_arena=True)
    assert "_input0();" in (bundle.out_dir / "README.md").read_text()
    assert 0 <= example_runs(bundle.out_dir, tmp_path) < 12


def test_a_cortex_m_readme_gives_the_toolchain_file_and_the_code_bytes(compiled):
    bundle = compiled(example_model, "cortex-m4f")
    readme = (bundle.out_dir / "README.md").read_text()
    measured = json.loads((bundle.out_dir / "manifest.json").read_text())["cortex_m"]
    assert "-DCMAKE_TOOLCHAIN_FILE=path/to/" in readme
    assert f"| {measured['bundle_code_bytes']:,} |" in readme


def test_model_text_reaches_the_readme_escaped(tmp_path):
    name = MARKUP_NAMES[2]
    model = tmp_path / "a*b_[c](d)`e`.onnx"
    model.write_bytes(relu_onnx(input_name=name))
    bundle = compile(model, "lowpower", tmp_path / "out")
    readme = (bundle.out_dir / "README.md").read_text()
    assert all(char.isprintable() or char == "\n" for char in readme)
    escaped = "".join(f"\\{char}" if char in "\\`*_{}[]<>()#+-.!|~&$" else char for char in printable(name))
    assert f"| input 0 | {escaped} |" in readme
    assert "a\\*b\\_\\[c\\]\\(d\\)\\`e\\`\\.onnx" in readme
