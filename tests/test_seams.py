"""The seams of issue 14 (items 6 and 8): the compile driver's stages and the package boundaries.

- The plan holds dtype names and bytes; C types are the packager's; the QEMU tooling is `emulator/`, not the
  packager's; selftest.c's static C comes from template files.
- The driver reads the model file once and imports it in the format the check found; the call order makes a
  new plan; the packager writes manifest.json once, from one BundleFacts, and removes its build leftovers.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import io
import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from conftest import profile_build_config
from test_packager import hand_made_bundle

MOVED_TO_EMULATOR = ("boards", "qemu", "selftest", "sizes", "stack", "tools")
SELFTEST_TEMPLATES = ("selftest_checksum.c", "selftest_value_class.c", "selftest_check_float.c.in",
                      "selftest_decimal.c", "selftest_check_integer.c.in")


def test_c_types_are_the_packagers_and_cover_every_plan_dtype() -> None:
    import memory_planner.plan as plan
    from packager.c_types import C_TYPE_OF_DTYPE, c_type_of

    assert not hasattr(plan, "DTYPE_C_TYPE") and not hasattr(plan.Tensor, "c_type")
    assert set(C_TYPE_OF_DTYPE) == set(plan.DTYPE_BYTES)
    assert c_type_of("int8") == "int8_t" and c_type_of("float32") == "float"


@pytest.mark.parametrize("module", MOVED_TO_EMULATOR)
def test_the_emulator_tooling_is_its_own_package(module: str) -> None:
    assert importlib.util.find_spec(f"emulator.{module}") is not None
    assert importlib.util.find_spec(f"backends.cortex_m.bundle_files.{module}") is None


def test_one_error_name_means_one_thing() -> None:
    import memory_planner.check as memory_check

    assert not hasattr(memory_check, "PlanError") and issubclass(memory_check.InvalidMemoryPlanError, ValueError)


def test_selftest_c_takes_its_static_c_from_the_templates(tmp_path: Path) -> None:
    """A bundle with a float and an int8 output holds every helper template verbatim (the `.c.in` ones
    substituted for its C types)."""
    from memory_planner.plan import ExecutionPlan, KernelCall, Tensor, TensorRole
    from packager import TestCase, TestVectors
    from packager.io_names import io_tensors
    from packager.selftest import write_selftest

    tensors = {"x": Tensor("x", (2,), "float32", TensorRole.INPUT, "x"),
               "y": Tensor("y", (2,), "float32", TensorRole.OUTPUT, "copy"),
               "q": Tensor("q", (2,), "int8", TensorRole.OUTPUT, "quantize")}
    plan = ExecutionPlan("two", "hand-made", "lowpower", tensors, [KernelCall("k", ("copy",), ("x",), ("y", "q"))],
                         ["x"], ["y", "q"])
    case = TestCase([np.zeros(2, np.float32)], [np.zeros(2, np.float32), np.zeros(2, np.int8)])
    vectors = TestVectors((case,), "by hand")
    text = write_selftest(plan, io_tensors(plan, ["x"], ["x"], "input"),
                          io_tensors(plan, ["y", "q"], ["y", "q"], "output"), vectors)
    folder = resources.files("packager").joinpath("templates")
    for name in SELFTEST_TEMPLATES:
        template = folder.joinpath(name).read_text(encoding="utf-8")
        if name.endswith(".in"):
            c_type = "float" if "float" in name else "int8_t"
            template = template.replace("$t", c_type).replace("$fmt", "%.9g")
        assert template in text, name


def _count_reads(monkeypatch, path: Path) -> list[str]:
    """Every open of `path` for reading in this process, from now on (io.open serves Path.read_bytes, builtin
    open serves onnx.load)."""
    reads: list[str] = []
    real_open = io.open

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).resolve() == path.resolve() and "r" in mode:
            reads.append(mode)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    return reads


def test_the_compiler_reads_the_model_file_once_and_imports_it_in_the_checked_format(shared_models, tmp_path,
                                                                                   monkeypatch) -> None:
    """A TFLite file named `.bin` passes the check by its identifier, so the import must not guess the format
    from the extension again; and neither the import nor anything else of ours reads the file a second time
    (the reference runtime's child process reads it by its path)."""
    import tvm_ext

    model = tmp_path / "hello.bin"
    shutil.copyfile(shared_models / "tflm" / "hello_world_int8.tflite", model)
    reads = _count_reads(monkeypatch, model)
    bundle = tvm_ext.compile(model, target="lowpower", out=tmp_path / "out")
    assert bundle.selftest.passed
    assert len(reads) == 1, reads


def test_the_call_order_makes_a_new_plan(monkeypatch) -> None:
    import target
    from memory_planner.plan import ExecutionPlan, KernelCall, Tensor, TensorRole
    from tvm_ext.compile import pipeline

    tensors = {"x": Tensor("x", (4,), "float32", TensorRole.INPUT, "x"),
               "a": Tensor("a", (4,), "float32", TensorRole.INTERMEDIATE, "a"),
               "b": Tensor("b", (4,), "float32", TensorRole.INTERMEDIATE, "b"),
               "y": Tensor("y", (4,), "float32", TensorRole.OUTPUT, "y")}
    calls = [KernelCall("k_a", ("a",), ("x",), ("a",)), KernelCall("k_b", ("b",), ("x",), ("b",)),
             KernelCall("k_y", ("y",), ("a", "b"), ("y",))]
    plan = ExecutionPlan("order", "hand-made", "lowpower", tensors, list(calls), ["x"], ["y"])
    monkeypatch.setattr(pipeline, "choose_order", lambda _plan: [1, 0, 2])
    planned = pipeline.planning(plan, target.load_profile("lowpower"))
    assert planned.plan.calls == [calls[1], calls[0], calls[2]]
    assert plan.calls == calls  # the extracted plan is not edited in place


def test_the_manifest_is_written_once_at_the_end_with_the_final_facts(tmp_path: Path) -> None:
    import target
    from packager import BundleFacts, finish_bundle, write_bundle
    from packager.selftest_verdict import SelftestResult

    # built for an emulated board: its runner's build folder (build-cortex-m) is a leftover too
    bundle = dataclasses.replace(hand_made_bundle(np.array([[-1.5, 7.0]], np.float32)),
                                 config=profile_build_config("cortex-m4f"))
    write_bundle(tmp_path, bundle)
    assert not (tmp_path / "manifest.json").exists()  # nothing half-known is written before the self-test
    leftovers = [tmp_path / "hand_model.o", tmp_path / "selftest", tmp_path / "build-cortex-m" / "selftest.elf"]
    for leftover in leftovers:
        leftover.parent.mkdir(exist_ok=True)
        leftover.write_text("")
    result = SelftestResult(True, 0, (), (), "", "host")
    headroom = target.Headroom(target.load_profile("lowpower"),
                               target.RamUse(64, 8, 8, 0, 256, target.StackSource.MEASURED),
                               target.FlashUse.weights_only(16, target.FlashSource.WEIGHTS_ONLY))
    tarball = finish_bundle(tmp_path, bundle, BundleFacts({"cc": "cc 1"}, {"name": "lowpower"}, headroom, result, {}))
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert list(manifest)[-4:] == ["tools", "selftest", "profile", "headroom"]
    assert manifest["selftest"] == {"reference": "hand arithmetic", "rtol": 1e-5, "atol_lsb": 0, "cases": 1,
                                    "passed": True, "where": "host", "max_abs_errors": [], "outputs": []}
    assert not any(path.exists() for path in leftovers) and not (tmp_path / "build-cortex-m").exists()
    assert tarball == tmp_path / "hand.tar.gz" and tarball.is_file()


def test_lp_board_h_names_the_file_it_is_generated_from() -> None:
    """The board table moved to emulator/: the generated header's comment must not send a reader to a file
    that no longer exists."""
    import re

    from conftest import REPO, profile_target
    from backends.cortex_m.bundle_files.support import board_header

    source = re.search(r"generated from (\S+)\. \*/", board_header(profile_target("cortex-m4f"))).group(1)
    assert (REPO / source).is_file(), source
