"""--patches off|auto|NxM (tvm_ext.compile.patches): a bad value is one line and exit 2; a grid compiles a bundle
whose self-test passes; auto runs patches only when the layer-by-layer RAM does not fit the profile's SRAM, then
says so in one line and records the plan in the manifest; and refuses with the best plan's excess when none
fits. The model is a chain of window stages built here, but for person_detect on cortex-m0plus (issue 31)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import tvm_ext
from c_checks import strict_sanitized_selftest
from conftest import models_dir
from emulator.tools import missing_tools
from tflite_models import chain_model
from tvm_ext.compile import CompileError, DoesNotFitError
from tvm_ext.compile import __main__ as cli
from tvm_ext.compile.patches import parse_patches

IMAGE = (61, 59)  # odd: uneven patches
CHANNELS = 16  # the first stages hold the peak, as in a MobileNet


@pytest.mark.parametrize("value", ["1x1", "0x2", "2x", "x3", "sideways", "2x4x1", "-1x2", "2X4", "2 x 4"])
def test_a_bad_patches_value_is_one_line_and_exit_2(value, capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main(["m.tflite", "-o", "out", f"--patches={value}"])
    lines = capsys.readouterr().err.splitlines()
    assert ended.value.code == 2
    assert len(lines) == 1 and lines[0].startswith("tvm_ext.compile: error: "), lines
    assert "--patches takes off, auto or a grid NxM" in lines[0] and repr(value) in lines[0], lines


def test_patches_values():
    assert [parse_patches(text) for text in ("off", "auto", "2x4", "3x1", "1x12")] == [
        "off", "auto", (2, 4), (3, 1), (1, 12)]


def test_the_python_call_refuses_a_bad_grid_before_any_work(tmp_path):
    with pytest.raises(CompileError, match=r"hello_world_int8.tflite: --patches takes .* not '0x2'"):
        tvm_ext.compile(models_dir() / "tflm" / "hello_world_int8.tflite", "lowpower", tmp_path / "out",
                        patches=(0, 2))
    assert not (tmp_path / "out").exists()


def _board(tmp_path: Path, sram_bytes: int) -> str:
    path = tmp_path / "board.toml"
    path.write_text(f'extends = "lowpower"\nname = "my-board"\nsram_bytes = {sram_bytes}\n')
    return str(path)


@pytest.mark.slow
def test_auto_runs_patches_only_where_layer_by_layer_does_not_fit(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    whole = tvm_ext.compile(model, "lowpower", tmp_path / "whole", patches="auto")
    assert "patches" not in json.loads((tmp_path / "whole" / "manifest.json").read_text())

    lines: list[str] = []
    patched = tvm_ext.compile(model, _board(tmp_path, whole.total_ram_bytes - 1), tmp_path / "patched",
                              patches="auto", log=lines.append)
    assert patched.selftest.passed
    said = [line for line in lines if line.split()[:1] == ["patches"]]
    assert len(said) == 1 and f"arena {whole.arena_bytes:,} B layer by layer -> {patched.arena_bytes:,} B" in said[0]
    entry = json.loads((tmp_path / "patched" / "manifest.json").read_text())["patches"]
    assert entry["arena_bytes_layer_by_layer"] == whole.arena_bytes > entry["arena_bytes"] == patched.arena_bytes
    assert entry["extra_macs"] > 0 and "Patch-based execution" in (tmp_path / "patched" / "report.md").read_text()


@pytest.mark.slow
def test_a_grid_compiles_a_bundle_whose_selftest_passes_on_a_poisoned_arena(tmp_path):
    """The patches' plan is an ordinary one: the self-test passes with every byte no live buffer holds poisoned
    before each call, under the strict warnings and the sanitizers."""
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="3x2")
    assert bundle.selftest.passed
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["patches"]
    assert entry["grid"] == [3, 2] and entry["arena_bytes_layer_by_layer"] is None
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_auto_refuses_with_the_best_plans_excess_when_none_fits(tmp_path):
    """1,000 B of arena at most: no plan fits; the line gives layer by layer's excess and the best plan's,
    compiled and planned (not the cost model's estimate)."""
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    io_and_stack = IMAGE[0] * IMAGE[1] * 3 + 1_092 + 1_024  # input, output (13 x 14 x 6), lowpower's stack bound
    with pytest.raises(DoesNotFitError, match=r"^chain: RAM needs [\d,]+ B .* \([\d,]+ B over\); patch by patch at "
                                              r"best \(\d+x\d+ patches .*\) RAM needs [\d,]+ B \([\d,]+ B over\)$"):
        tvm_ext.compile(model, _board(tmp_path, io_and_stack + 1_000), tmp_path / "out", patches="auto")
    assert not (tmp_path / "out").exists()


needs_qemu = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")


@needs_qemu
@pytest.mark.slow
def test_person_detect_fits_cortex_m0plus_patch_by_patch_with_its_code_counted(tmp_path):
    """Refused layer by layer (arena 37,632 B + its 9,216 B input over 32 KB). --patches auto fits its RAM but
    picks the 2x3 grid of fewest extra MACs, whose per-patch kernels of distinct shapes bring the code to 33,048
    B: with the code counted (233,602 B of weights) that is 4,506 B over the 262,144 B of flash, refused on the
    flash alone. The 2x2 grid (fewer distinct patch kernels: 26,356 B of code) fits both, all of its RAM and
    flash counted, and the emulated self-test agrees with TFLite Micro bit for bit."""
    model = models_dir() / "tflm" / "person_detect.tflite"
    with pytest.raises(DoesNotFitError, match=r"^person_detect: weights \+ code need [\d,]+ B of flash \(weights "
                                              r"[\d,]+ B \+ code [\d,]+ B .*\) but cortex-m0plus has 262,144 B "
                                              r"\([\d,]+ B over\)$") as refused:
        tvm_ext.compile(model, "cortex-m0plus", tmp_path / "refused", patches="auto")
    assert [overrun.memory for overrun in refused.value.overruns] == ["flash"]  # its RAM fits
    assert not (tmp_path / "refused").exists()
    lines: list[str] = []
    bundle = tvm_ext.compile(model, "cortex-m0plus", tmp_path / "out", patches=(2, 2), log=lines.append)
    assert bundle.selftest.passed and bundle.total_ram_bytes <= 32_768
    assert bundle.flash.measured and bundle.flash.total_bytes <= 262_144
    assert sum(line.split()[:1] == ["patches"] for line in lines) == 1
    assert bundle.arena_bytes < 37_632 // 2
