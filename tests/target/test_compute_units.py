"""Compute units: a profile's `units`, their cost models calibrated from measured instructions, and each
subgraph assigned to the supported unit with the lowest score (MACs x cost + bytes moved across units)."""

from __future__ import annotations

from pathlib import Path

import pytest

import target
from memory_planner.plan import KernelCall, ModelOperator, TensorRole
from memory_planner_cases import make_plan, tensor
from target.compute_unit import ComputeUnit, instructions_per_mac_by_kind
from tvm_ext.plan.unit_assignment import NoUnitError, UnitChoice, assign_units

MAC_UNIT = ComputeUnit("mac_unit", "cc", ("-O3",), frozenset({"FULLY_CONNECTED"}), {"FULLY_CONNECTED": 1.5})
HOST = ComputeUnit("host", "cc", ("-O1",), default_instructions_per_mac=4.0)


def call(kernel: str, kind: str, inputs: tuple[str, ...], outputs: tuple[str, ...], subgraph: int,
         macs: int) -> KernelCall:
    return KernelCall(kernel, (kernel,), inputs, outputs, subgraph=subgraph,
                      operators=(ModelOperator(kernel, kind, subgraph),), macs=macs)


def chain_plan():
    """x -> FULLY_CONNECTED (1,000 MACs) -> a -> CONV_2D (500 MACs) -> b -> FULLY_CONNECTED (10 MACs) -> y, one
    call per subgraph; a and b are 250 float32 values (1,000 bytes)."""
    tensors = [tensor("x", (25,), TensorRole.INPUT), tensor("a", (250,)), tensor("b", (250,)),
               tensor("y", (1,), TensorRole.OUTPUT)]
    return make_plan(tensors, [call("fc1", "FULLY_CONNECTED", ("x",), ("a",), 0, 1000),
                               call("conv", "CONV_2D", ("a",), ("b",), 1, 500),
                               call("fc2", "FULLY_CONNECTED", ("b",), ("y",), 2, 10)])


def test_each_subgraph_goes_to_the_supported_unit_with_the_lowest_score():
    """fc1: 1,500 on the MAC unit against 4,000 on the host. conv: only the host runs it, 2,000 + the 1,000
    bytes of `a` the MAC unit wrote. fc2: 15 + 1,000 bytes of `b` moved back on the MAC unit against 40 on
    the host, where `b` already is."""
    assert assign_units(chain_plan(), (MAC_UNIT, HOST)) == [
        UnitChoice(0, "mac_unit", 1500.0), UnitChoice(1, "host", 3000.0), UnitChoice(2, "host", 40.0)]


def test_the_cost_model_decides_when_no_data_moves():
    slow_mac_unit = ComputeUnit("mac_unit", "cc", ("-O3",), frozenset({"FULLY_CONNECTED"}),
                                {"FULLY_CONNECTED": 5.0})
    assert [c.unit for c in assign_units(chain_plan(), (slow_mac_unit, HOST))] == ["host", "host", "host"]


def test_a_subgraph_no_unit_runs_is_refused_naming_its_operator_kinds():
    with pytest.raises(NoUnitError, match=r"subgraph 1: no compute unit runs all of CONV_2D"):
        assign_units(chain_plan(), (MAC_UNIT,))


def test_a_profile_without_units_has_its_own_core_as_the_one_unit():
    profile = target.load_profile("cortex-m4f")
    assert profile.units == ()
    (unit,) = profile.compute_units
    assert (unit.name, unit.c_compiler, unit.cflags) == ("cortex_m4f", profile.c_compiler, profile.cflags)
    assert [c.unit for c in assign_units(chain_plan(), profile.compute_units)] == ["cortex_m4f"] * 3




CONV_AND_HOST = """extends = "lowpower"
name = "conv-and-host"
subgraph_bytes = 64
[[units]]
name = "conv_unit"
operators = ["Conv", "Relu", "MaxPool"]
c_compiler = "cc"
cflags = ["-O3"]
instructions_per_mac = { Conv = 1.0 }
[[units]]
name = "host"
c_compiler = "cc"
cflags = ["-O1"]
default_instructions_per_mac = 4
"""


def test_a_profile_file_lists_its_units(tmp_path: Path):
    path = tmp_path / "conv-and-host.toml"
    path.write_text(CONV_AND_HOST)
    conv_unit = ComputeUnit("conv_unit", "cc", ("-O3",), frozenset({"Conv", "Relu", "MaxPool"}), {"Conv": 1.0})
    assert target.load_profile(path).compute_units == (conv_unit, HOST)


@pytest.mark.parametrize("change, message", [
    (("cflags = [\"-O1\"]\n", ""), "unit 'host': missing field 'cflags'"),
    (("default_instructions_per_mac = 4", "default_instructions_per_mac = 0"),
     "unit 'host': field 'default_instructions_per_mac' has a bad value 0"),
    (('name = "host"', 'name = "conv_unit"'), "names the same unit twice"),
    (("operators", "operator"), "unit 'conv_unit': unknown field 'operator'"),
])
def test_a_bad_unit_is_one_line_naming_the_file_the_unit_and_the_field(tmp_path: Path, change, message):
    path = tmp_path / "conv-and-host.toml"
    path.write_text(CONV_AND_HOST.replace(*change))
    with pytest.raises(target.ProfileError) as err:
        target.load_profile(path)
    assert str(err.value).startswith(f"{path}: field 'units' ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_cost_model_is_calibrated_from_a_bundles_measured_instructions():
    """hello_world_int8 on cortex-m4f as its manifest's layer_report says (QEMU -icount), with a call that
    has no MACs (left out) and a second kind."""
    def entry(kind: str, macs: int, instructions: int) -> dict:
        return {"layers": [{"name": kind.lower(), "operator": kind, "index": 0}], "macs": macs,
                "instructions": instructions}

    report = {"calls": [entry("FULLY_CONNECTED", 16, 676), entry("FULLY_CONNECTED", 256, 1099),
                        entry("FULLY_CONNECTED", 16, 125), entry("RESHAPE", 0, 40), entry("CONV_2D", 100, 250)]}
    assert instructions_per_mac_by_kind(report) == {"CONV_2D": 2.5, "FULLY_CONNECTED": 1900 / 288}
    unmeasured = {"calls": [{k: v for k, v in entry("CONV_2D", 100, 250).items() if k != "instructions"}]}
    assert instructions_per_mac_by_kind(unmeasured) == {}


def test_each_unit_gets_its_kernel_library_and_the_manifest_names_each_subgraphs_unit_and_score(tmp_path: Path):
    """The example in 64-byte subgraphs (one call each): conv1+relu1, pool1, conv2+relu2 on the conv unit (1
    instruction per MAC against 4, nothing moved: the model's input is in shared memory); the global pool, which
    only the host runs, pays for the 7,680 bytes conv2 left on the conv unit; fc (Gemm, 192 MACs) and the
    softmax stay on the host, where their input already is. Each unit's kernels are in its own file, compiled
    with its flags; the outputs are bit for bit those of the same model in the same subgraphs on one unit."""
    import json

    import tvm_ext
    from conftest import example_model
    from test_partition_subgraphs import lowpower

    profile = tmp_path / "conv-and-host.toml"
    profile.write_text(CONV_AND_HOST)
    model = example_model(tmp_path)
    bundle = tvm_ext.compile(model, target=profile, out=tmp_path / "out", jobs=1)
    single = tvm_ext.compile(model, target=lowpower(64), out=tmp_path / "single", jobs=1)
    assert bundle.selftest.passed and bundle.selftest.checksums == single.selftest.checksums
    kernels = {path.name.removeprefix("example_kws_cnn_kernels_"): path.read_text()
               for path in bundle.out_dir.glob("example_kws_cnn_kernels*.c")}
    assert sorted(kernels) == ["conv_unit.c", "host.c"]
    defined = {unit: [call.kernel for call in bundle.plan.calls if f"{call.kernel}(" in text]
               for unit, text in kernels.items()}
    assert [k.removeprefix("example_kws_cnn_")[:6] for k in defined["conv_unit.c"]] == ["conv2d", "max_po", "conv2d"]
    assert len(defined["host.c"]) == 3 and not set(defined["host.c"]) & set(defined["conv_unit.c"])
    makefile = (bundle.out_dir / "Makefile").read_text()
    assert "example_kws_cnn_kernels_conv_unit.o: CFLAGS = -std=c99 -O3\n" in makefile
    assert "example_kws_cnn_kernels_host.o: CFLAGS = -std=c99 -O1\n" in makefile
    manifest = json.loads((bundle.out_dir / "manifest.json").read_text())
    assert manifest["profile"]["units"] == ["conv_unit", "host"]
    assert [(s["unit"], s["score"]) for s in manifest["subgraph_units"]] == [
        ("conv_unit", 35280.0), ("conv_unit", 0.0), ("conv_unit", 138240.0), ("host", 7680.0), ("host", 768.0),
        ("host", 0.0)]
    assert [s["subgraph"] for s in manifest["subgraph_units"]] == list(range(6))


def test_a_profile_whose_units_miss_an_operator_is_refused_in_one_line(tmp_path: Path):
    from conftest import run_cli

    profile = tmp_path / "conv-only.toml"
    profile.write_text(CONV_AND_HOST[:CONV_AND_HOST.index('[[units]]\nname = "host"')])
    done = run_cli("--example", "--target", str(profile), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "tvm_ext.compile: error: example_kws_cnn.onnx: the conv-and-host profile's compute units: subgraph 3: "
        "no compute unit runs all of GlobalAveragePool"]
    assert not (tmp_path / "out").exists()


def test_units_on_an_emulated_profile_are_refused_in_one_line(tmp_path: Path):
    from conftest import run_cli

    profile = tmp_path / "m4-units.toml"
    profile.write_text(CONV_AND_HOST.replace('extends = "lowpower"\nname = "conv-and-host"',
                                             'extends = "cortex-m4f"\nname = "m4-units"'))
    done = run_cli("--example", "--target", str(profile), "-o", str(tmp_path / "out"))
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        "tvm_ext.compile: error: example_kws_cnn.onnx: the m4-units profile lists compute units, which are built "
        "for the host only so far; give a profile without qemu_board"])
