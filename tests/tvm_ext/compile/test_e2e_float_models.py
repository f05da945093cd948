"""End-to-end: every shared float model becomes a bundle that builds with the C compiler and whose self-test
matches LiteRT's reference kernels within 1e-5 of the output's scale (the self-test's own comparison). Each
bundle, and the built-in example's, also builds without a warning under -Wconversion -Wshadow and passes its
self-test under ASan and UBSan."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile

import pytest

from c_checks import loops_without_constant_bounds, strict_sanitized_selftest
from conftest import example_model

FLOAT_MODELS = [
    "tflm/hello_world_float.tflite",
    "mlperf_tiny/ad01_fp32.tflite",
    "mlperf_tiny/pretrainedResnet.tflite",
    "mlperf_tiny/vww_96_float.tflite",
]


@pytest.fixture(params=FLOAT_MODELS, ids=lambda m: m.split("/")[1])
def float_bundle(request, compiled):
    return compiled(request.param)


def test_selftest_matches_litert(float_bundle):
    assert float_bundle.selftest.passed, float_bundle.selftest.output
    assert "LiteRT" in float_bundle.selftest.output
    assert len(float_bundle.selftest.max_errors) == len(float_bundle.plan.outputs)


def test_bundle_has_every_file(float_bundle):
    m = float_bundle.plan.model
    names = {p.name for p in float_bundle.files}
    expected = {f"{m}.h", f"{m}_internal.h", f"{m}_kernels.c", f"{m}_model.c", f"{m}_weights.c", "selftest.c",
                "Makefile", "CMakeLists.txt", "manifest.json", f"lib{m}.a", f"{m}.tar.gz"}
    assert expected <= names
    with tarfile.open(float_bundle.archive) as tar:
        archived = {name.split("/", 1)[1] for name in tar.getnames()}
    assert expected - {f"{m}.tar.gz"} <= archived


def test_no_tvm_runtime_and_no_heap(float_bundle):
    for path in float_bundle.out_dir.iterdir():
        if path.suffix in (".c", ".h"):
            text = path.read_text()
            assert "tvm/" not in text, path.name
            assert not re.search(r"TVMBackend|TVMFFI|TVM_DLL|TVM_EXPORTS", text), path.name
    symbols = subprocess.run(["nm", "-u", str(float_bundle.library)], capture_output=True, text=True, check=True)
    undefined = set(re.findall(r"\bU (\w+)", symbols.stdout))
    assert not undefined & {"malloc", "free", "calloc", "realloc"}
    assert not any(s.startswith("TVM") for s in undefined)


def test_header_sizes_agree_with_manifest(float_bundle):
    m = float_bundle.plan.model
    manifest = json.loads((float_bundle.out_dir / "manifest.json").read_text())
    header = (float_bundle.out_dir / f"{m}.h").read_text()
    arena = int(re.search(rf"#define {m.upper()}_ARENA_BYTES (\d+)u", header).group(1))
    weights = int(re.search(rf"#define {m.upper()}_WEIGHT_BYTES (\d+)u", header).group(1))
    assert arena == manifest["arena"]["bytes"] == float_bundle.arena_bytes
    assert weights == manifest["weight_bytes"]
    assert manifest["arena"]["lower_bound_bytes"] <= arena
    for tensor in manifest["tensors"]:
        if "offset" in tensor:
            assert tensor["offset"] + tensor["bytes"] <= arena


def test_every_call_names_its_layer(float_bundle):
    model_c = (float_bundle.out_dir / f"{float_bundle.plan.model}_model.c").read_text()
    comments = re.findall(r"/\* (\d+): (.*) \*/", model_c)
    assert len(comments) == len(float_bundle.plan.calls)
    assert all(layer and layer != "(no layer name)" for _, layer in comments)


def test_every_loop_bound_is_a_constant(float_bundle):
    assert loops_without_constant_bounds(float_bundle.out_dir, float_bundle.plan.model) == []


def test_builds_warning_free_and_passes_under_sanitizers(float_bundle, tmp_path):
    proc = strict_sanitized_selftest(float_bundle.out_dir, tmp_path)
    assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stdout + proc.stderr


def test_example_builds_warning_free_and_passes_under_sanitizers(compiled, tmp_path):
    example = compiled(example_model)
    proc = strict_sanitized_selftest(example.out_dir, tmp_path / "strict")
    assert proc.returncode == 0 and "PASS" in proc.stdout, proc.stdout + proc.stderr
