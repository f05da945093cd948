"""The flash check counts the code: after the emulated build, the bundle's objects in the linked self-test
(weights, kernels and run function with their read-only data, the .data image) against the profile's flash; a
bundle that does not fit is refused with one line naming the model, the profile and the bytes over (exit 2,
nothing left behind). A bundle not built for an emulated board has its weights alone checked, and its manifest
and report.html say so.

Before: the check counted the weights alone, so person_detect on cortex-m0plus (233,602 B of weights + 33,048 B
of code against 262,144 B of flash) was accepted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import target
import tvm_ext
from conftest import models_dir
from emulator.tools import missing_tools

MODEL = "hello_world_int8"

needs_qemu = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")


def model_path() -> Path:
    return models_dir() / "tflm" / f"{MODEL}.tflite"


def board(tmp_path: Path, flash_bytes: int) -> Path:
    """A profile file that is cortex-m0plus with `flash_bytes` of flash, named small-flash: data, no special case."""
    path = tmp_path / f"small_flash_{flash_bytes}.toml"
    path.write_text(f'extends = "cortex-m0plus"\nname = "small-flash"\nflash_bytes = {flash_bytes}\n')
    return path


@needs_qemu
def test_the_emulated_bundle_counts_its_measured_code_and_weights(compiled):
    bundle = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus")
    flash = bundle.flash
    assert flash.source is target.FlashSource.MEASURED and flash.code_bytes > 0
    # each constant once, as the plan counts them, and the linker's fill before each its alignment asks for
    arrays, alignment = len(bundle.plan.constants()), target.load_profile("cortex-m0plus").alignment_bytes
    assert bundle.weight_bytes <= flash.weights_bytes < bundle.weight_bytes + arrays * alignment
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    headroom, measured = manifest["headroom"], manifest["cortex_m"]
    assert measured["bundle_flash"] == {"code": flash.code_bytes, "weights": flash.weights_bytes,
                                        "data": flash.data_bytes}
    assert headroom["flash_used_bytes"] == flash.total_bytes and headroom["flash_counted"] == "measured"
    assert headroom["flash_headroom_bytes"] == 262_144 - flash.total_bytes
    assert flash.code_bytes >= measured["bundle_code_bytes"]  # .text, and read-only data beside it


@needs_qemu
def test_a_board_whose_flash_holds_the_weights_but_not_the_code_is_refused_after_the_build(compiled, tmp_path,
                                                                                           cli_in_process):
    flash = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus").flash
    short = flash.total_bytes - 1
    assert short >= flash.weights_bytes  # the weights alone fit: only the code counted refuses it
    out = tmp_path / "out"
    proc = cli_in_process(str(model_path()), "--target", str(board(tmp_path, short)), "-o", str(out), "--jobs", "1")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"tvm_ext.compile: error: {MODEL}: weights + code need {flash.total_bytes:,} B of flash (weights "
        f"{flash.weights_bytes:,} B + code {flash.code_bytes:,} B + data {flash.data_bytes:,} B measured in the "
        f"emulated board's linked self-test) but small-flash has {short:,} B (1 B over)"]
    assert "[tvm_ext] self-test" in proc.stdout  # the code is known only once the emulated build ran
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [board(tmp_path, short).name]


@needs_qemu
def test_a_board_whose_flash_is_exactly_the_bundles_accepts_it(compiled, tmp_path):
    flash = compiled(f"tflm/{MODEL}.tflite", "cortex-m0plus").flash
    bundle = tvm_ext.compile(model_path(), str(board(tmp_path, flash.total_bytes)), tmp_path / "out", jobs=1)
    assert bundle.flash == flash and bundle.selftest.passed


def test_without_a_build_the_manifest_and_report_say_the_flash_counts_the_weights_only(tmp_path):
    bundle = tvm_ext.compile(model_path(), "cortex-m0plus", tmp_path / "out", build=False, jobs=1)
    assert bundle.flash == target.FlashUse.weights_only(bundle.weight_bytes, target.FlashSource.WEIGHTS_ONLY)
    headroom = json.loads((bundle.out_dir / "manifest.json").read_text())["headroom"]
    assert (headroom["flash_used_bytes"], headroom["flash_code_bytes"], headroom["flash_counted"]) == (
        bundle.weight_bytes, 0, "weights_only")
    assert "flash: weights only (code not counted" in (bundle.out_dir / "report.html").read_text()
