"""The memory plan checked in C: a conv model's self-test passes under AddressSanitizer with every arena byte
that no live buffer holds poisoned before each call, and the same poisoning catches a liveness error."""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from memory_planner.from_plan import buffers_from_plan
from packager.aot_entry import write_model_c
from packager.io_names import io_tensors
from c_checks import strict_sanitized_selftest
from conftest import writable_copy


@pytest.fixture
def resnet(compiled):
    return compiled("mlperf_tiny/pretrainedResnet.tflite")


def poisoned_selftest(bundle, work_dir) -> subprocess.CompletedProcess:
    return strict_sanitized_selftest(bundle.out_dir, work_dir, f"-D{bundle.plan.model.upper()}_POISON_ARENA")


def rewrite_model_c(bundle, buffers) -> None:
    plan = bundle.plan
    inputs = io_tensors(plan, plan.inputs, plan.inputs, "input")
    outputs = io_tensors(plan, plan.outputs, plan.outputs, "output")
    text = write_model_c(plan, inputs, outputs, bundle.memory.offsets, buffers, bundle.arena_bytes, 16)
    (bundle.out_dir / f"{plan.model}_model.c").write_text(text)


def test_poisoned_gaps_and_asan_still_match_the_reference(resnet, tmp_path):
    proc = poisoned_selftest(resnet, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


def test_poisoning_catches_a_buffer_freed_one_step_early(resnet, tmp_path):
    buffers = buffers_from_plan(resnet.plan, alignment=16)
    victim = next(b for b in buffers if b.last_step > b.first_step + 1)
    wrong = [dataclasses.replace(b, last_step=b.last_step - 1) if b is victim else b for b in buffers]
    mine = writable_copy(resnet, tmp_path / "wrong")
    rewrite_model_c(mine, wrong)
    assert poisoned_selftest(mine, tmp_path / "build").returncode != 0
