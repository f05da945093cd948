"""Several models in one bundle (tvm_ext.compile.several): one run function per model over one shared arena
(one per RAM region for a profile that lists several), each constant once, one library and one self-test running
every model's cases; and its refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import target
from c_checks import strict_sanitized_selftest
from conftest import models_dir, run_cli, two_region_profile
from readme_examples import example_runs

pytest.importorskip("tvm")

KWS = "mlperf_tiny/kws_ref_model.tflite"
AD01 = "mlperf_tiny/ad01_int8.tflite"


def _defined_arrays(weights_c: str) -> list[str]:
    """The names of the arrays a weights file defines."""
    return [line.split("[", 1)[0].split()[-1] for line in weights_c.splitlines()
            if " const " in line and "] = " in line]


@pytest.mark.slow
def test_cortex_m4f_bundle_of_two_models_runs_bit_exact_on_qemu_on_one_arena(compiled, tmp_path: Path) -> None:
    """kws_ref_model and ad01_int8 in one cortex-m4f bundle: both self-tests bit-exact with TFLite Micro on the
    emulated board, one static arena of the larger model's bytes (and none of the models' own), each model's
    arena as alone, the weights and code of both, the deepest stack, and less RAM than the two bundles apart."""
    from tvm_ext.compile import compile

    bundle = compile([models_dir() / KWS, models_dir() / AD01], "cortex-m4f", tmp_path / "out", name="kws_ad01")
    alone = {"kws_ref_model": compiled(KWS, "cortex-m4f"), "ad01_int8": compiled(AD01, "cortex-m4f")}
    assert set(bundle.selftests) == set(alone)
    for model, result in bundle.selftests.items():
        assert result.passed and result.where == "mps2-an386"
        assert result.reports and all(report.bit_identical for report in result.reports)
        assert result.cases == alone[model].selftest.cases
        # the same kernels and run function; the static run's wrapper passes another arena (a few instructions)
        assert abs(result.instructions - alone[model].selftest.instructions) <= 16
        # each model's calls counted by the profiling build's part of that model, as its bundle alone counts them
        assert result.call_instructions == alone[model].selftest.call_instructions
    arenas = {member.name: member.bundle.memory.arena_bytes for member in bundle.members}
    assert arenas == {model: b.arena_bytes for model, b in alone.items()}
    assert bundle.arena_bytes == max(arenas.values()) == bundle.ram.arena_bytes
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["arena"]["bytes"] == bundle.arena_bytes
    assert manifest["cortex_m"]["arena_bytes"] == bundle.arena_bytes  # the one static arena linked: kws_ad01_arena
    assert [m["model"] for m in manifest["models"]] == ["kws_ref_model", "ad01_int8"]
    assert {m["model"]: m["arena"]["bytes"] for m in manifest["models"]} == arenas
    # the two models share no constant: the weights of both
    assert bundle.weight_bytes == manifest["weight_bytes"] == sum(b.weight_bytes for b in alone.values())
    # measured: those bytes and the linker's fill before each array its alignment asks for
    arrays = sum(len(b.plan.constants()) for b in alone.values())
    alignment = target.load_profile("cortex-m4f").alignment_bytes
    assert bundle.flash.measured and 0 <= bundle.flash.weights_bytes - bundle.weight_bytes < arrays * alignment
    # the code of both (each static run function passes the shared arena: a few bytes more than its own)
    assert 0 <= bundle.flash.code_bytes - sum(b.flash.code_bytes for b in alone.values()) <= 64
    assert bundle.ram.stack_bytes == max(b.ram.stack_bytes for b in alone.values())
    assert bundle.ram.total_bytes < sum(b.total_ram_bytes for b in alone.values())
    header = (bundle.out_dir / "kws_ad01.h").read_text()
    assert f"#define KWS_AD01_ARENA_BYTES {bundle.arena_bytes}u" in header
    assert "neither reentrant nor concurrent" in header
    for model in alone:
        model_c = (bundle.out_dir / f"{model}_model.c").read_text()
        assert f"{model}_arena[" not in model_c and "kws_ad01_arena, KWS_AD01_ARENA_BYTES" in model_c
    assert (bundle.out_dir / "libkws_ad01.a").is_file() and (bundle.out_dir / "kws_ad01.tar.gz").is_file()
    assert "| instructions |" in (bundle.out_dir / "ad01_int8_report.md").read_text()


def test_constants_identical_across_models_are_stored_once(tmp_path: Path) -> None:
    """Two copies of one model under two names: the bundle stores each constant once (the second model's run
    function passes the first's arrays), the weights are those of one model, and both self-tests pass on the
    host through the one library; the header of each model is the header it has alone."""
    from tvm_ext.compile import compile

    for name in ("first", "second"):
        shutil.copy(models_dir() / KWS, tmp_path / f"{name}.tflite")
    bundle = compile([tmp_path / "first.tflite", tmp_path / "second.tflite"], "lowpower", tmp_path / "out",
                     name="pair", jobs=1)
    assert all(result.passed for result in bundle.selftests.values())
    first, second = (member.bundle.plan for member in bundle.members)
    assert bundle.weight_bytes == first.weight_bytes() == second.weight_bytes()
    assert bundle.weight_bytes_separately == 2 * bundle.weight_bytes
    arrays = _defined_arrays((bundle.out_dir / "pair_weights.c").read_text())
    assert arrays and all(array.startswith("first_") for array in arrays)
    assert len(arrays) == len(first.constants())
    assert "second_" not in (bundle.out_dir / "second_internal.h").read_text().split("Weights (const")[1]
    assert bundle.arena_bytes == bundle.members[0].bundle.memory.arena_bytes
    alone = compile(tmp_path / "second.tflite", "lowpower", tmp_path / "alone", build=False, jobs=1)
    assert (bundle.out_dir / "second.h").read_text() == (alone.out_dir / "second.h").read_text()
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["weight_bytes_separately"] == 2 * manifest["weight_bytes"]
    assert [m["weights_stored_by_other_models"] for m in manifest["models"]] == [0, len(second.constants())]


def test_each_model_of_the_self_test_is_judged_on_its_own_lines(tmp_path: Path) -> None:
    """The one self-test program's output is judged per model (read_several_selftest): every model passes on the
    whole output; an output that stops before the second model's part fails that model (its outputs are not
    reported), whatever the first model's part says."""
    from packager.build import make, run_host_program
    from packager.several import read_several_selftest
    from tvm_ext.compile import compile

    tflm = models_dir() / "tflm"
    bundle = compile([tflm / "hello_world_int8.tflite", tflm / "micro_speech_quantized.tflite"], "lowpower",
                     tmp_path / "out", jobs=1)
    make(bundle.out_dir, "selftest")
    code, ending, output = run_host_program(bundle.out_dir)
    members = [member.bundle for member in bundle.members]
    assert all(result.passed for result in read_several_selftest(code, ending, output, "host", members).values())
    cut = output[:output.index("selftest: micro_speech_quantized compared with")]
    judged = read_several_selftest(code, ending, cut, "host", members)
    assert judged["hello_world_int8"].passed and not judged["micro_speech_quantized"].passed
    assert "reported 0 of its" in judged["micro_speech_quantized"].problem
    library = subprocess.run(["make", "-s", "clean", "lib", "EXTRA_CFLAGS=-DMODELS_NO_STATIC_ARENA"],
                             cwd=bundle.out_dir, capture_output=True, text=True, timeout=300)
    assert library.returncode == 0, library.stderr
    symbols = subprocess.run(["nm", "libmodels.a"], cwd=bundle.out_dir, capture_output=True, text=True).stdout
    assert "hello_world_int8_run_with_arena" in symbols
    assert "models_arena" not in symbols and " hello_world_int8_run\n" not in symbols


def test_the_command_builds_a_bundle_of_two_models_on_the_host(tmp_path: Path, cli_in_process) -> None:
    """`tvm-ext-compile a b --target lowpower -o OUT`: one bundle, its library and self-test built by its
    Makefile, each model's report, one summary line naming both arenas and the shared one."""
    tflm = models_dir() / "tflm"
    done = cli_in_process(str(tflm / "hello_world_int8.tflite"), str(tflm / "micro_speech_quantized.tflite"),
                          "--target", "lowpower", "-o", str(tmp_path / "out"), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("[tvm_ext] models: 2 models, shared arena 4,004 B") and "self-test PASS" in summary
    out = tmp_path / "out"
    for name in ("models.h", "models_model.c", "models_weights.c", "selftest.c", "Makefile", "CMakeLists.txt",
                 "manifest.json", "hello_world_int8_report.md", "micro_speech_quantized_report.md", "libmodels.a",
                 "hello_world_int8_memory_plan.svg", "micro_speech_quantized_memory_plan.svg"):
        assert (out / name).is_file(), name
    rebuilt = subprocess.run(["make", "-s", "check"], cwd=out, capture_output=True, text=True, timeout=300)
    assert rebuilt.returncode == 0 and rebuilt.stdout.strip().endswith("selftest: PASS"), rebuilt.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    readme = (out / "README.md").read_text()
    assert f"| shared arena (the largest model's, RAM) | {manifest['arena']['bytes']:,} |" in readme
    assert f"| weights (const, flash; a constant of several models stored once) | {manifest['weight_bytes']:,} |" \
        in readme
    examples = re.findall(r'^```c\n#include "(\w+)\.h"', readme, re.MULTILINE)
    for index, model in enumerate(manifest["models"]):
        assert re.search(rf"^\| `{model['model']}` \|.*\| PASS on host, \d+ input case\(s\) \|$", readme, re.MULTILINE)
        assert examples[index] == model["model"]
        html = (out / f"{model['model']}_report.html").read_text()
        assert "<!DOCTYPE html>" in html and f"weights stored {model['weight_bytes']:,} B" in html
        # Each model's usage example compiles against its header, links with the one library of both and runs
        # on the shared arena: a class index of its output, not -1 (an error status).
        header = (out / f"{model['model']}.h").read_text()
        classes = int(re.search(rf"#define {model['model'].upper()}_OUTPUT0_ELEMENTS (\d+)u", header).group(1))
        assert 0 <= example_runs(out, tmp_path, "models", index) < classes


def test_models_share_each_ram_regions_arena_sized_for_the_larger(tmp_path: Path) -> None:
    """On a profile of two RAM regions each model is planned over both as alone; the bundle has one static arena
    per region, of the larger model's arena in that region (the models run one at a time), placed by the bundle's
    section macros, and no model has an arena of its own; the RAM counted is the regions' shared arenas; the
    self-test passes on the host with every arena poisoned and the sections defined."""
    from tvm_ext.compile import compile

    fast = 1_024
    (tmp_path / "two.toml").write_text(two_region_profile("lowpower", "two", ("fast", fast), ("slow", 524_288 - fast)))
    tflm = models_dir() / "tflm"
    bundle = compile([tflm / "hello_world_int8.tflite", tflm / "micro_speech_quantized.tflite"],
                     str(tmp_path / "two.toml"), tmp_path / "out", jobs=1)
    assert all(result.passed for result in bundle.selftests.values())
    out, own = bundle.out_dir, [member.bundle.regions for member in bundle.members]
    assert all([arena.region for arena in regions] == ["fast", "slow"] for regions in own)
    shared = [max(regions[index].memory.arena_bytes for regions in own) for index in range(2)]
    assert 0 < shared[0] <= fast and shared[1] == bundle.arena_bytes > 0
    assert [arena.memory.arena_bytes for arena in bundle.regions] == shared
    assert bundle.ram.arena_bytes == sum(shared) and bundle.ram.faster_arena_bytes == shared[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(r["region"], r["arena_bytes"], r["symbol"]) for r in manifest["memory_regions"]] == [
        ("fast", shared[0], "models_arena_fast"), ("slow", shared[1], "models_arena")]
    assert [r["models"] for r in manifest["memory_regions"]] == [
        {m.name: m.bundle.regions[index].memory.arena_bytes for m in bundle.members} for index in range(2)]
    assert all(len(m["memory_regions"]) == 2 for m in manifest["models"])
    header, arenas_c = (out / "models.h").read_text(), (out / "models_model.c").read_text()
    assert f"#define MODELS_ARENA_FAST_BYTES {shared[0]}u" in header
    assert f"MODELS_ARENA_FAST_SECTION MODELS_ALIGNED(16) uint8_t models_arena_fast[{shared[0]}];" in arenas_c
    assert "MODELS_ARENA_SLOW_SECTION MODELS_ALIGNED(16) uint8_t models_arena[MODELS_ARENA_BYTES];" in arenas_c
    for member in bundle.members:
        model_c = (out / f"{member.name}_model.c").read_text()
        assert "static uint8_t" not in model_c and "{models_arena_fast, arena}" in model_c
        assert "## RAM regions" in (out / f"{member.name}_report.md").read_text()
        assert (out / f"{member.name}_memory_plan.svg").read_text().count('class="region"') == 2
    assert "`models_arena_fast` (fast, `MODELS_ARENA_FAST_BYTES` bytes)" in (out / "README.md").read_text()
    assert "MODELS_WEIGHTS_SECTION MODELS_ALIGNED(16) const" in (out / "models_weights.c").read_text()
    poison = " ".join(f"-D{m.name.upper()}_POISON_ARENA" for m in bundle.members)
    sections = " ".join(f"'-DMODELS_{name}_SECTION=__attribute__((section(\"{section}\")))'" for name, section in
                        (("ARENA_FAST", ".bss.fast_arena"), ("ARENA_SLOW", ".bss.slow_arena"),
                         ("WEIGHTS", ".rodata.model_weights")))
    proc = strict_sanitized_selftest(out, tmp_path / "strict", f"{poison} {sections}")
    assert proc.returncode == 0 and proc.stdout.strip().endswith("selftest: PASS"), proc.stdout + proc.stderr


@pytest.mark.parametrize("arguments, says", [
    (["{same}", "{kws}"], "its C prefix kws_ref_model is also kws_ref_model.tflite's"),
    (["{kws}", "{ad01}", "--name", "kws_ref_model"], "give the bundle another name with --name"),
    (["{kws}", "{ad01}", "--name", "kws"], "could name the same symbol"),
    (["{kws}", "{ad01}", "--quantize", "int8"], "--quantize chooses for one model"),
    (["{kws}", "{ad01}", "--patches", "auto"], "--patches chooses for one model"),
    (["{kws}", "{ad01}", "--io-in-arena"], "--io-in-arena chooses for one model"),
    (["{kws}", "{ad01}", "--input-rows"], "--input-rows chooses for one model"),
    (["{kws}", "{ad01}", "--validate", "x.npz"], "--validate takes one model"),
    (["{kws}", "{ad01}", "--analyze"], "--analyze takes one model"),
])
def test_refusals_of_several_models(tmp_path: Path, arguments: list[str], says: str) -> None:
    """What a bundle of several models cannot be made of is refused in one line, exit code 2, with nothing
    written."""
    (tmp_path / "copy").mkdir()
    shutil.copy(models_dir() / KWS, tmp_path / "copy" / "kws_ref_model.tflite")
    paths = {"kws": str(models_dir() / KWS), "ad01": str(models_dir() / AD01),
             "same": str(tmp_path / "copy" / "kws_ref_model.tflite")}
    done = run_cli(*(argument.format(**paths) for argument in arguments), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvm_ext.compile: error: ") and says in lines[0], done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_micro_speech_preprocessor_and_keyword_model_in_one_firmware_on_qemu(tmp_path: Path) -> None:
    """TFLM's micro_speech pair in one cortex-m4f bundle: the audio preprocessor (signal-library helpers, state)
    and the keyword model, both bit-exact with TFLite Micro on the emulated board; the preprocessor's state is
    counted beside the one arena of the larger model's bytes."""
    from audio_preprocessor_models import audio_preprocessor

    from tvm_ext.compile import compile

    preprocessor = tmp_path / "audio_preprocessor_int8.tflite"
    preprocessor.write_bytes(audio_preprocessor(float_output=False))
    bundle = compile([preprocessor, models_dir() / "tflm/micro_speech_quantized.tflite"], "cortex-m4f",
                     tmp_path / "out", name="speech")
    assert {model: result.passed for model, result in bundle.selftests.items()} == {
        "audio_preprocessor_int8": True, "micro_speech_quantized": True}
    assert all(report.bit_identical for result in bundle.selftests.values() for report in result.reports)
    assert bundle.arena_bytes == max(member.bundle.memory.arena_bytes for member in bundle.members)
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["cortex_m"]["arena_bytes"] == bundle.arena_bytes  # the one static arena, as linked
    assert bundle.ram.state_bytes == 160  # the preprocessor's noise estimate and sample buffers
    assert "AUDIO_PREPROCESSOR_INT8_NO_STATIC_ARENA" in (bundle.out_dir / "speech.h").read_text()


@pytest.mark.slow
def test_constants_shared_across_models_are_linked_once_on_cortex_m(compiled, tmp_path: Path) -> None:
    """ad01_int8 and a copy of it under another name on cortex-m4f: the linked self-test holds the weights once
    (measured in its map file: the bytes of one model's), and both self-tests pass bit-exact under QEMU."""
    from tvm_ext.compile import compile

    shutil.copy(models_dir() / AD01, tmp_path / "ad01_again.tflite")
    bundle = compile([models_dir() / AD01, tmp_path / "ad01_again.tflite"], "cortex-m4f", tmp_path / "out",
                     name="twice")
    alone = compiled(AD01, "cortex-m4f")
    assert all(result.passed for result in bundle.selftests.values())
    assert all(report.bit_identical for result in bundle.selftests.values() for report in result.reports)
    assert bundle.weight_bytes == alone.weight_bytes == bundle.weight_bytes_separately // 2
    assert bundle.flash.measured and bundle.flash.weights_bytes == alone.flash.weights_bytes
    assert bundle.arena_bytes == alone.arena_bytes


def test_an_empty_list_of_models_is_refused_as_bad_input(tmp_path: Path) -> None:
    """The Python call given no model file says so (CompileError: bad input, exit 2 from the command), rather
    than failing inside the compiler; nothing is written."""
    from tvm_ext.compile import CompileError, compile as compile_bundle

    with pytest.raises(CompileError, match="no model given"):
        compile_bundle([], "lowpower", tmp_path / "out")
    assert not (tmp_path / "out").exists()
