"""--patches off|auto|NxM (tvm_ext.compile.patches): a bad value is one line and exit 2; a grid compiles a bundle
whose self-test passes; auto runs patches only when the layer-by-layer RAM does not fit the profile's SRAM, then
says so in one line and records the plan in the manifest; and refuses with the best plan's excess when none
fits. The model is a chain of window stages built here, but for person_detect on cortex-m0plus (issue 31)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import target
import tvm_ext
from c_checks import strict_sanitized_selftest
from conftest import models_dir
from emulator.tools import missing_tools
from target.resources import FlashSource, FlashUse, RamUse, ResourceError, StackSource, check_fits
from tflite_models import chain_model, residual_model, skip_concat_model, tcn_model
from tvm_ext.compile import CompileError, DoesNotFitError
from tvm_ext.compile import __main__ as cli
from tvm_ext.compile import patches
from tvm_ext.compile.patches import AutoSearch, StreamRequest, parse_patches
from tvm_ext.patch_geometry import PatchPlan

IMAGE = (61, 59)  # odd: uneven patches
CHANNELS = 16  # the first stages hold the peak, as in a MobileNet


@pytest.mark.parametrize("value", ["1x1", "0x2", "2x", "x3", "sideways", "2x4x1", "-1x2", "2X4", "2 x 4", "stream1",
                                   "stream0", "streamx", "Stream"])
def test_a_bad_patches_value_is_one_line_and_exit_2(value, capsys):
    with pytest.raises(SystemExit) as ended:
        cli.main(["m.tflite", "-o", "out", f"--patches={value}"])
    lines = capsys.readouterr().err.splitlines()
    assert ended.value.code == 2
    assert len(lines) == 1 and lines[0].startswith("tvm_ext.compile: error: "), lines
    assert "--patches takes off, auto, a grid NxM" in lines[0] and repr(value) in lines[0], lines


def test_patches_values():
    assert [parse_patches(text) for text in ("off", "auto", "2x4", "3x1", "1x12", "stream", "stream12")] == [
        "off", "auto", (2, 4), (3, 1), (1, 12), StreamRequest(), StreamRequest(12)]
    assert [str(parse_patches(text)) for text in ("stream", "stream12")] == ["stream", "stream12"]


def test_the_python_call_refuses_a_bad_grid_before_any_work(tmp_path):
    with pytest.raises(CompileError, match=r"hello_world_int8.tflite: --patches takes .* not '0x2'"):
        tvm_ext.compile(models_dir() / "tflm" / "hello_world_int8.tflite", "lowpower", tmp_path / "out",
                        patches=(0, 2))
    assert not (tmp_path / "out").exists()


def test_more_streamed_bands_than_rows_are_refused_in_one_line(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    with pytest.raises(CompileError, match=r"chain.tflite: --patches stream999: the model has no chain of windowed "
                                           r"NHWC stages from an input that delivers that many rows$"):
        tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream999", build=False)
    assert not (tmp_path / "out").exists()


def _board(tmp_path: Path, sram_bytes: int) -> str:
    path = tmp_path / "board.toml"
    path.write_text(f'extends = "lowpower"\nname = "my-board"\nsram_bytes = {sram_bytes}\n')
    return str(path)


def test_auto_goes_on_after_a_plan_refused_after_its_build(monkeypatch):
    """A plan whose planned RAM fits but whose flash (measured after its build) does not is not the end: the
    next plan is compiled; when every plan is refused, the line gives the best one's excess on each limit."""
    profile = target.resolve_profile("cortex-m0plus")
    candidates = [PatchPlan(4, (1, 2), 20_000, 20_000, 100, 10_000), PatchPlan(8, (2, 2), 15_000, 15_000, 500, 10_000)]
    monkeypatch.setattr(patches, "auto_candidates", lambda func, budget, rows=False: candidates)
    monkeypatch.setattr(patches, "cut_layer", lambda func, cut: f"layer {cut}")

    def planned(arena: int, macs: int):
        plan = SimpleNamespace(model="m", total_macs=lambda: macs)
        return SimpleNamespace(plan=plan), RamUse(arena, 9_216, 2, 0, 0, StackSource.PENDING)

    layer_by_layer, whole_ram = planned(37_632, 10_000)
    compiled = []

    def compile_with(cut):
        compiled.append(cut.grid)
        plan = next(p for p in candidates if p.grid == cut.grid)
        done, ram = planned(plan.arena_bytes + 100, 10_000 + plan.extra_macs)
        return "lowered", "generated", done, ram

    search = AutoSearch(None, profile, layer_by_layer, whole_ram, compile_with)
    *_, first_ram, first = search.next_fitting()
    assert compiled == [(1, 2)] and first.grid == (1, 2) and first.extra_macs == 100

    def refuse(ram: RamUse, code: int):
        flash = FlashUse(233_602, code, 0, FlashSource.MEASURED)
        with pytest.raises(ResourceError) as refused:
            check_fits(profile, "m", ram, flash)
        return flash, DoesNotFitError(str(refused.value), refused.value.overruns)

    *_, second_ram, second = search.refused(first, first_ram, *refuse(first_ram, 40_000))
    assert compiled == [(1, 2), (2, 2)] and second.grid == (2, 2)
    assert search.line(second).endswith("; 1x2 up to window stage 4 was refused after its build (flash "
                                        f"{233_602 + 40_000 - 262_144:,} B over)")
    with pytest.raises(DoesNotFitError) as none_left:
        search.refused(second, second_ram, *refuse(second_ram, 30_000))
    # the best plan is the one of fewest bytes over: the 2x2 grid, whose RAM fits
    assert none_left.value.overruns[-1].memory == "flash" and len(none_left.value.overruns) == 1
    assert str(none_left.value).endswith(
        f"patch by patch at best ({second.line()}) RAM needs {second_ram.total_bytes:,} B (fits), weights + code "
        f"need {233_602 + 30_000:,} B of flash ({233_602 + 30_000 - 262_144:,} B over)")


def test_auto_refuses_a_plan_whose_weights_alone_do_not_fit_before_planning_it(monkeypatch):
    """A plan whose weights (known once its code is generated) alone exceed the flash is refused without its
    planning (`compile_with` raises PlanWeightsDoNotFit: no memory plan changes the weights) and the search goes on;
    when every plan is so refused, the line gives the best one's estimated arena, not planned, and its weights."""
    profile = target.resolve_profile("cortex-m0plus")
    candidates = [PatchPlan(4, (1, 2), 20_000, 20_000, 100, 10_000), PatchPlan(8, (2, 2), 15_000, 15_000, 500, 10_000)]
    monkeypatch.setattr(patches, "auto_candidates", lambda func, budget, rows=False: candidates)
    monkeypatch.setattr(patches, "cut_layer", lambda func, cut: f"layer {cut}")
    weights = {(1, 2): 300_000, (2, 2): 280_000}
    planned = []

    def compile_with(cut):
        patches.refuse_unless_weights_fit(profile, "m", FlashUse.weights_only(weights[cut.grid], FlashSource.PENDING))
        planned.append(cut.grid)  # never reached: both plans' weights exceed cortex-m0plus's flash

    layer_by_layer = SimpleNamespace(plan=SimpleNamespace(model="m", total_macs=lambda: 10_000))
    whole_ram = RamUse(37_632, 9_216, 2, 0, 0, StackSource.PENDING)
    search = AutoSearch(None, profile, layer_by_layer, whole_ram, compile_with)
    with pytest.raises(DoesNotFitError) as none_left:
        search.next_fitting()
    assert planned == []
    assert [o.memory for o in none_left.value.overruns] == ["flash"]
    assert none_left.value.overruns[0].excess_bytes == 280_000 - profile.flash_bytes
    assert str(none_left.value).endswith(
        "patch by patch at best (2x2 patches up to layer 8 (window stage 8): arena estimated 15,000 B, not planned) "
        f"weights need 280,000 B of flash ({280_000 - profile.flash_bytes:,} B over)")


@pytest.mark.parametrize("request_, refusal", [
    ("auto", DoesNotFitError), ("stream", CompileError)])
def test_plans_are_of_the_chain_in_the_layouts_the_passes_choose(tmp_path, request_, refusal):
    """A float model whose first convolutions go to NCHW (here forced) has no window chain of NHWC stages where the
    patch pass runs: `auto` and `stream` refuse in one line, as for a model without a chain, instead of planning
    the cuts of the imported NHWC graph that the patch pass then cannot find (PatchPlanError: an internal error)."""
    model = tmp_path / "residual_float.tflite"
    model.write_bytes(residual_model(IMAGE, CHANNELS, float32=True))
    with pytest.raises(refusal, match=r"no chain of windowed NHWC stages from (a model|an) input") as refused:
        tvm_ext.compile(model, _board(tmp_path, 150_000), tmp_path / "out", patches=request_, layout="nchw",
                        build=False)
    assert "\n" not in str(refused.value) and not (tmp_path / "out").exists()



@pytest.mark.parametrize("request_, refusal", [("auto", DoesNotFitError), ("stream", CompileError)])
def test_no_plan_cuts_where_an_operator_outside_the_stages_reads_the_prefix(tmp_path, request_, refusal):
    """A skip joined by a CONCATENATION (a U-Net's, which no window stage joins) reads the first stage's output
    after the second: the graph ends in one value after stage 1 alone (WindowChain.cuts), so no streamed plan cuts
    later, and `auto` and `stream` refuse in one line, where the planner had offered a cut the patch pass then
    could not make (PatchPlanError: an internal error; seed-110 unseen U-Nets on cortex-m0plus)."""
    model = tmp_path / "skip_concat.tflite"
    model.write_bytes(skip_concat_model(IMAGE, CHANNELS))
    with pytest.raises(refusal, match=r"no chain of windowed NHWC stages from (a model|an) input") as refused:
        tvm_ext.compile(model, _board(tmp_path, 20_000), tmp_path / "out", patches=request_, build=False)
    assert "\n" not in str(refused.value) and not (tmp_path / "out").exists()


def small_float_residual(folder: Path) -> Path:
    """A float residual CNN of 4 channels on a 32x32 input, written into `folder` (a ModelFactory of the session's
    bundle cache: the tests below share its layer-by-layer compiles)."""
    model = folder / "residual_float.tflite"
    model.write_bytes(residual_model((32, 32), 4, float32=True))
    return model


@pytest.mark.parametrize("under_nhwc", [0, 1], ids=["layer_by_layer_in_nhwc", "patches_in_nhwc"])
def test_auto_searches_nhwc_when_the_layouts_chosen_have_no_chain(compiled, tmp_path, under_nhwc):
    """A small float model whose layout estimate puts its first convolutions in NCHW (lowpower, 4 channels: no
    window chain of NHWC stages from the input) and whose layer-by-layer RAM does not fit: `auto` (with the
    layouts chosen, no --layout) compiles it with every layer in NHWC, layer by layer when that fits (no extra
    MACs), else patch by patch (a board `under_nhwc` byte below layer by layer in NHWC), its self-test passing,
    instead of refusing the model. (Both cases compare with the same two layer-by-layer compiles: the session's.)"""
    model = small_float_residual(tmp_path)
    whole = compiled(small_float_residual, "lowpower", build=False)
    layouts = json.loads((whole.out_dir / "manifest.json").read_text())["subgraph_layouts"]
    assert layouts[0]["layout"] == "NCHW"  # the case this test is about
    nhwc = compiled(small_float_residual, "lowpower", build=False, layout="nhwc")
    assert nhwc.total_ram_bytes < whole.total_ram_bytes
    lines: list[str] = []
    sram = nhwc.total_ram_bytes - under_nhwc if under_nhwc else whole.total_ram_bytes - 1
    bundle = tvm_ext.compile(model, _board(tmp_path, sram), tmp_path / "out", log=lines.append)
    assert bundle.selftest.passed and bundle.total_ram_bytes <= sram
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert {choice["layout"] for choice in manifest["subgraph_layouts"]} == {"NHWC"}
    assert ("patches" in manifest) == bool(under_nhwc)
    said = [line for line in lines if line.split()[:1] == ["patches"]]
    assert len(said) == 1 and "every layer in NHWC" in said[0]


def test_auto_refuses_in_one_line_when_no_plan_fits_in_nhwc_either(tmp_path):
    """The same model on a board where no plan fits, in the layouts chosen or in NHWC: one line, naming the best
    plan with every layer in NHWC."""
    model = small_float_residual(tmp_path)
    with pytest.raises(DoesNotFitError, match=r"; patch by patch with every layer in NHWC at best \(") as refused:
        tvm_ext.compile(model, _board(tmp_path, 14_000), tmp_path / "out", build=False)
    assert "\n" not in str(refused.value) and not (tmp_path / "out").exists()

@pytest.mark.slow
def test_the_default_auto_runs_patches_only_where_layer_by_layer_does_not_fit(tmp_path):
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    whole = tvm_ext.compile(model, "lowpower", tmp_path / "whole")  # auto: the default
    assert "patches" not in json.loads((tmp_path / "whole" / "manifest.json").read_text())

    lines: list[str] = []
    patched = tvm_ext.compile(model, _board(tmp_path, whole.total_ram_bytes - 1), tmp_path / "patched",
                              log=lines.append)
    assert patched.selftest.passed
    said = [line for line in lines if line.split()[:1] == ["patches"]]
    assert len(said) == 1 and f"arena {whole.arena_bytes:,} B layer by layer -> {patched.arena_bytes:,} B" in said[0]
    entry = json.loads((tmp_path / "patched" / "manifest.json").read_text())["patches"]
    assert entry["arena_bytes_layer_by_layer"] == whole.arena_bytes > entry["arena_bytes"] == patched.arena_bytes
    # streamed bands come first (no extra MACs)
    assert entry["extra_macs"] == 0 and entry["streamed_bands"] == entry["grid"][0]
    assert "run streamed in" in (tmp_path / "patched" / "report.md").read_text()


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


def pooled_chain(folder: Path) -> Path:
    """The chain of window stages up to a global average pool, written into `folder` (a ModelFactory of the
    session's bundle cache)."""
    model = folder / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS, global_pool=True))
    return model


@pytest.mark.slow
@pytest.mark.parametrize("patches", ["stream", "stream3"])
def test_streamed_bands_to_a_global_pool_pass_their_selftest_on_a_poisoned_arena(compiled, tmp_path, patches):
    """Streamed bands up to a global average pool, summed band by band: no extra MACs, a smaller arena than layer
    by layer, recorded in the manifest; the plan is an ordinary one, so the self-test (against TFLite) passes with
    every byte no live buffer holds poisoned before each call, under the strict warnings and the sanitizers.
    (Both cases compare with the same layer-by-layer compile: the session's.)"""
    model = pooled_chain(tmp_path)
    whole = compiled(pooled_chain, "lowpower", build=False)
    lines: list[str] = []
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches=patches, log=lines.append)
    assert bundle.selftest.passed and bundle.arena_bytes < whole.arena_bytes
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["patches"]
    assert entry["extra_macs"] == 0 and entry["bands_of_window_stage"] >= 1 and entry["grid"][1] == 1
    if patches == "stream":  # the smallest estimate: up to the global pool (window stage 7), its sums band by band
        assert entry["cut_after_window_stage"] == 7 and entry["streamed_bands"] == entry["grid"][0] > 3
    else:
        assert entry["streamed_bands"] == 3
    assert any(line.startswith("patches") and "streamed bands of window stage" in line for line in lines), lines
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_streamed_bands_to_a_cut_concatenate_its_rows(tmp_path):
    """Streamed bands up to a cut inside the chain: the cut's rows are concatenated, the rest layer by layer."""
    model = tmp_path / "chain.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS))
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream4")
    assert bundle.selftest.passed
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["patches"]
    assert entry["extra_macs"] == 0 and entry["streamed_bands"] == 4
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_streamed_bands_through_residual_joins_pass_their_selftest_on_a_poisoned_arena(tmp_path):
    """Streamed bands through a ResNet's residual blocks up to its global pool (`stream`: the plan of smallest
    estimate): each skip branch keeps only the rows its join still reads; no extra MACs, an arena under half the
    layer-by-layer one, and the self-test (against TFLite) passes with every byte no live buffer holds poisoned
    before each call, under the strict warnings and the sanitizers."""
    model = tmp_path / "residual.tflite"
    model.write_bytes(residual_model(IMAGE, CHANNELS))
    whole = tvm_ext.compile(model, "lowpower", tmp_path / "whole", build=False)
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream")
    assert bundle.selftest.passed and 2 * bundle.arena_bytes < whole.arena_bytes
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["patches"]
    assert entry["extra_macs"] == 0 and entry["cut_after_window_stage"] == 8 and entry["streamed_bands"] > 3
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_a_float_resnets_streamed_bands_sum_its_global_pool_bit_exactly_on_a_poisoned_arena(tmp_path):
    """A float residual CNN streamed up to its global average pool (`stream`: the plan of smallest estimate), the
    pool summed band by band in float: no stage output held whole, the outputs of every self-test case the
    layer-by-layer bundle's to the bit (and LiteRT's within the float tolerance), and the self-test passes with
    every byte no live buffer holds poisoned before each call, under the strict warnings and the sanitizers."""
    model = tmp_path / "residual_float.tflite"
    model.write_bytes(residual_model(IMAGE, CHANNELS, float32=True))
    whole = tvm_ext.compile(model, "lowpower", tmp_path / "whole")
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream")
    assert whole.selftest.passed and bundle.selftest.passed and 2 * bundle.arena_bytes < whole.arena_bytes
    manifests = [json.loads((tmp_path / name / "manifest.json").read_text()) for name in ("whole", "out")]
    entry = manifests[1]["patches"]
    assert entry["extra_macs"] == 0 and entry["cut_after_window_stage"] == 8 and entry["streamed_bands"] > 3
    checksums = [[output["checksum"] for output in manifest["selftest"]["outputs"]] for manifest in manifests]
    assert checksums[0] == checksums[1] and len(checksums[0]) > 1
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_streamed_bands_into_a_dense_head_pass_their_selftest_on_a_poisoned_arena(tmp_path):
    """Streamed bands from a flat input's reshape into a FULLY_CONNECTED over the flattened last output
    (micro_speech's form), its partial dot products summed band by band: no extra MACs, a smaller arena than layer by
    layer, and the self-test (against TFLite) passes with every byte no live buffer holds poisoned before each call,
    under the strict warnings and the sanitizers. A row-wise input is refused: the chain starts at a reshape."""
    model = tmp_path / "dense.tflite"
    model.write_bytes(chain_model(IMAGE, CHANNELS, dense_units=5, flat_input=True))
    entry = _streamed_on_a_poisoned_arena(model, tmp_path)
    assert entry["extra_macs"] == 0 and entry["cut_after_window_stage"] == 7 and entry["streamed_bands"] > 3
    with pytest.raises(CompileError, match="--input-rows needs a chain of windowed NHWC stages from the model input"):
        tvm_ext.compile(model, "lowpower", tmp_path / "rows", build=False, input_rows=True)


needs_qemu = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")


@needs_qemu
@pytest.mark.slow
def test_person_detect_fits_cortex_m0plus_patch_by_patch_with_its_code_counted(compiled):
    """Refused layer by layer (arena 37,632 B + its 9,216 B input over 32 KB). --patches auto takes the plan of
    fewest extra MACs (streamed bands: none) that fits every limit with everything counted: its planned RAM, then
    after its build the stack measured under QEMU and the flash measured with its code (each band's or patch's
    kernels have shapes of their own). A plan refused after its build does not end the search. The bundle agrees
    with TFLite Micro bit for bit under QEMU. (--patches auto is the default: the session's compile, whose bundle
    the backend suite compares with generic_c.)"""
    key = ("tflm/person_detect.tflite", "cortex-m0plus")
    bundle, lines = compiled(*key), compiled.log_of(*key)
    assert bundle.selftest.passed
    assert bundle.ram.stack_source is StackSource.MEASURED and bundle.total_ram_bytes <= 32_768
    assert bundle.flash.measured and bundle.flash.total_bytes <= 262_144
    said = [line for line in lines if line.split()[:1] == ["patches"]]
    entry = json.loads((bundle.out_dir / "manifest.json").read_text())["patches"]
    # (layer by layer: 37,632 B forwards, less where convolutions run backwards: tvm_ext.compile.reversed_loops)
    assert said and all(f"arena {entry['arena_bytes_layer_by_layer']:,} B layer by layer -> " in line for line in said)
    assert entry["arena_bytes_layer_by_layer"] <= 37_632
    # the plans of fewest extra MACs are streamed bands (none): auto takes one when it fits
    assert entry["arena_bytes"] == bundle.arena_bytes < 37_632 and entry["extra_macs"] == 0
    assert entry["streamed_bands"] == entry["grid"][0] and "streamed bands" in said[-1]
    assert f"-> {bundle.arena_bytes:,} B" in said[-1]


@pytest.mark.slow
def test_a_1d_convolution_network_streams_in_bands_of_time_steps_on_a_poisoned_arena(tmp_path):
    """A TCN (causal dilated Conv1D blocks as TFLite writes them: PAD, RESHAPE, CONV_2D 1x3, RESHAPE; residual
    ADDs of sequences; a MEAN over time) streamed in bands of its time steps up to the MEAN: an arena below layer
    by layer's, no extra MACs, and the self-test (against TFLite) passes with every byte no live buffer holds
    poisoned before each call, under the strict warnings and the sanitizers."""
    model = tmp_path / "tcn.tflite"
    model.write_bytes(tcn_model(steps=40, features=8, channels=16, dilations=(1, 2, 4)))
    entry = _streamed_on_a_poisoned_arena(model, tmp_path)
    # 3 convolutions and 2 joins, then the MEAN (window stage 6), summed band by band
    assert entry["extra_macs"] == 0 and entry["cut_after_window_stage"] == 6 and entry["streamed_bands"] > 2


def _streamed_on_a_poisoned_arena(model: Path, tmp_path: Path) -> dict:
    """`model` compiled for lowpower with --patches stream: its self-test passes, its arena is below layer by
    layer's, and its self-test passes on a poisoned arena under the strict warnings and the sanitizers; the
    manifest's patches entry."""
    whole = tvm_ext.compile(model, "lowpower", tmp_path / "whole", build=False)
    bundle = tvm_ext.compile(model, "lowpower", tmp_path / "out", patches="stream")
    assert bundle.selftest.passed and bundle.arena_bytes < whole.arena_bytes
    poisoned = f"-D{bundle.plan.model.upper()}_POISON_ARENA"
    proc = strict_sanitized_selftest(tmp_path / "out", tmp_path / "strict", poisoned)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr
    return json.loads((tmp_path / "out" / "manifest.json").read_text())["patches"]
