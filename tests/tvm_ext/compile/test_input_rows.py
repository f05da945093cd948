"""--input-rows (tvm_ext.plan.row_input): the bundle takes its image input row by row from a read_row callback and
holds only bands of it in its arena. A model whose input cannot be banded (several inputs, no chain of windowed
stages from its input) or a grid of several columns is refused in one line, exit 2; a banded bundle's self-test
feeds its rows from its embedded cases (checking they are asked for in increasing order, once each) and agrees
with the reference bit for bit, also with every dead arena byte poisoned; vww_96_int8 fits cortex-m0plus with all
of its RAM counted (issue 31)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tvm_ext
from c_checks import STRICT_WARNINGS, strict_sanitized_selftest
from conftest import models_dir
from emulator.tools import missing_tools
from target.resources import StackSource
from tflite_builder import Model, Operator, Quantization, Tensor, build
from tflite_models import chain_model
from tvm_ext.compile import __main__ as cli

IMAGE = (37, 29)  # odd: uneven bands


def _two_inputs_model() -> bytes:
    """ADD of two int8 images: two inputs, so no single input to give row by row."""
    quant = Quantization((0.05,), (-3,))
    tensors = [Tensor("a", (1, 8, 8, 3), "int8", quant), Tensor("b", (1, 8, 8, 3), "int8", quant),
               Tensor("sum", (1, 8, 8, 3), "int8", Quantization((0.1,), (1,)))]
    return build(Model(tensors, [Operator("ADD", inputs=(0, 1), outputs=(2,))], inputs=(0, 1), outputs=(2,)))


def _refusal(capsys, arguments: list[str]) -> str:
    code = cli.main(arguments)
    lines = capsys.readouterr().err.splitlines()
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("tvm_ext.compile: error: "), lines
    return lines[0]


def test_a_model_of_two_inputs_is_refused_in_one_line(tmp_path, capsys):
    model = tmp_path / "two.tflite"
    model.write_bytes(_two_inputs_model())
    line = _refusal(capsys, [str(model), "-o", str(tmp_path / "out"), "--input-rows", "--no-build"])
    assert "two.tflite: --input-rows takes a model of one image input and one output; this one has 2 inputs" in line
    assert not (tmp_path / "out").exists()


def test_a_model_without_a_spatial_input_is_refused_in_one_line(tmp_path, capsys):
    model = models_dir() / "tflm" / "hello_world_int8.tflite"
    line = _refusal(capsys, [str(model), "-o", str(tmp_path / "out"), "--input-rows", "--no-build"])
    assert "--input-rows needs a chain of windowed NHWC stages from the model input" in line


def test_a_grid_of_several_columns_is_refused_in_one_line(tmp_path, capsys):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, 8))
    line = _refusal(capsys, [str(model), "-o", str(tmp_path / "out"), "--input-rows", "--patches", "2x2",
                             "--no-build"])
    assert "--input-rows runs the first stages in bands of full rows: --patches 2x1 or auto, not 2x2" in line


@pytest.mark.slow
def test_a_banded_bundle_takes_its_rows_and_passes_on_a_poisoned_arena(tmp_path):
    """3 bands: the self-test gives the rows through read_row; the manifest records the bands, the RAM counts no
    input; the plan is an ordinary one: the self-test passes with every byte no live buffer holds poisoned
    before each call, under the strict warnings and the sanitizers."""
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, 8))
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="3x1", input_rows=True)
    assert bundle.selftest.passed and bundle.ram.input_bytes == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    rows = manifest["row_input"]
    assert rows["rows"] == IMAGE[0] and rows["row_bytes"] == IMAGE[1] * 3 and len(rows["bands"]) == 3
    assert rows["bands"][0]["rows"][0] == 0 and rows["bands"][-1]["rows"][1] == IMAGE[0]
    assert all(band["halo"] is not None for band in rows["bands"][1:])
    header = (tmp_path / "out" / "chain.h").read_text()
    assert "int chain_run(chain_read_row_t read_row, void* context, int8_t* output);" in header
    assert "selftest_read_row" in (tmp_path / "out" / "selftest.c").read_text()
    assert "## Row-wise input" in (tmp_path / "out" / "report.md").read_text()
    assert 0 <= _readme_example_runs(tmp_path / "out", tmp_path) < bundle.plan.tensors[bundle.plan.outputs[0]].elements
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr
    # A bundle that asks for a row again (its last band from row 0 on) fails its self-test: read_row refuses it.
    broken = tmp_path / "broken" / "out"
    shutil.copytree(tmp_path / "out", broken)
    model_c = broken / "chain_model.c"
    fetches = re.findall(r"lp_rows_fetch\(read_row, context, [^;]*", model_c.read_text())
    again = re.sub(r"(, \d+u, )(\d+)u(, \d+u, \d+u, arena)", r"\g<1>0u\g<3>", fetches[-1])
    model_c.write_text(model_c.read_text().replace(fetches[-1], again))
    proc = strict_sanitized_selftest(broken, tmp_path / "strict_broken")
    assert proc.returncode == 2 and "run failed with status 5" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_streamed_bands_take_their_rows_and_pass_on_a_poisoned_arena(tmp_path):
    """Streamed bands (each stage computing only its new rows) take the input row by row too: the first stage's
    bands of rows are fetched in increasing order, each row once; the self-test passes on a poisoned arena."""
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, 8))
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream6", input_rows=True)
    assert bundle.selftest.passed and bundle.ram.input_bytes == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["patches"]["streamed_bands"] == 6 and manifest["patches"]["extra_macs"] == 0
    bands = [band["rows"] for band in manifest["row_input"]["bands"]]
    assert bands[0][0] == 0 and bands[-1][1] == IMAGE[0] and all(a[0] <= b[0] for a, b in zip(bands, bands[1:]))
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


def _readme_example_runs(out: Path, tmp_path: Path) -> int:
    """Compile the bundle README's C example (its read_row, `classify(void)`) with a main() calling it, under the
    strict warnings as errors, run it, return what `classify` returned."""
    readme = (out / "README.md").read_text()
    example = re.search(r"^```c\n(#include .*?)^```", readme, re.MULTILINE | re.DOTALL).group(1)
    model = re.search(r'#include "(\w+)\.h"', example).group(1)
    source = tmp_path / "main.c"
    source.write_text('#include <stdio.h>\n' + example + '\nint main(void)\n{\n  printf("%d\\n", classify());\n'
                      '  return 0;\n}\n')
    program = tmp_path / "main"
    subprocess.run(["gcc", "-std=c99", "-O1", "-Wall", "-Wextra", *STRICT_WARNINGS.split(), f"-I{out}", str(source),
                    str(out / f"lib{model}.a"), "-lm", "-o", str(program)], check=True)
    return int(subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout)


needs_qemu = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")


@needs_qemu
@pytest.mark.slow
def test_vww_fits_cortex_m0plus_with_row_wise_input(tmp_path):
    """Refused on cortex-m0plus otherwise (its 27,648 B input alone): with --input-rows its first stages run in
    bands, the RAM with the stack measured under QEMU fits 32 KB, and the bundle agrees with TFLite Micro bit for
    bit under QEMU, its rows fed one by one."""
    model = models_dir() / "mlperf_tiny" / "vww_96_int8.tflite"
    bundle = tvm_ext.compile(model, "cortex-m0plus", tmp_path / "out", input_rows=True)
    assert bundle.selftest.passed and bundle.ram.input_bytes == 0
    assert bundle.ram.stack_source is StackSource.MEASURED and bundle.total_ram_bytes <= 32_768
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["patches"]["grid"][1] == 1 and manifest["row_input"]["rows"] == 96
    # the self-test's read_row, called through a pointer, is counted on the run's stack
    assert "selftest_read_row" in manifest["cortex_m"]["stack_peak_chain"]
