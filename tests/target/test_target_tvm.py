"""Profiles as TVM target tags: registration, round trip through tvm.target.Target, and the way back."""

from __future__ import annotations

import pytest

import target
import tvm

ARM_FEATURES = {"none": (False, False), "dsp": (True, False), "mve": (True, True)}  # simd -> (has_dsp, has_mve)


@pytest.fixture(scope="module", autouse=True)
def registered() -> tuple[str, ...]:
    return target.register_with_tvm()


def test_every_builtin_profile_is_registered_under_its_tag(registered):
    assert set(registered) == {target.load_profile(name).tvm_tag for name in target.profile_names()}
    assert "lowpower" in registered and "lowpower-cortex-m4f" in registered


@pytest.mark.parametrize("name", target.profile_names())
def test_tag_round_trips_through_target(name):
    profile = target.load_profile(name)
    built = tvm.target.Target(profile.tvm_tag)
    assert built.kind.name == "c"
    assert built.keys[0] == "lowpower" and "cpu" in built.keys
    assert built.attrs["mcpu"] == profile.cpu
    assert built.attrs["workspace-byte-alignment"] == profile.alignment_bytes
    assert built.tag == ""  # TVM 0.27 drops the tag on the built target: keys and model carry our identity
    assert target.is_lowpower_target(built)
    assert target.profile_for_target(built) == profile
    assert target.profile_for_target(tvm.target.Target(built.export())) == profile


def test_cortex_m4f_tag_by_name():
    built = tvm.target.Target("lowpower-cortex-m4f")
    assert built.attrs["mcpu"] == "cortex-m4"
    assert list(built.keys) == ["lowpower", "arm_cpu", "cpu"]


@pytest.mark.parametrize("name", [n for n in target.profile_names() if target.load_profile(n).arch.startswith("armv")])
def test_tvm_derives_the_same_dsp_and_mve_features_from_mcpu_as_the_profile_states(name):
    profile = target.load_profile(name)
    built = tvm.target.Target(profile.tvm_tag)
    assert (bool(built.attrs["feature.has_dsp"]), bool(built.attrs["feature.has_mve"])) == ARM_FEATURES[profile.simd]


def test_registering_twice_is_harmless():
    assert target.register_with_tvm() == target.register_with_tvm()
    assert target.profile_for_target("lowpower-cortex-m7").name == "cortex-m7"


def test_user_profile_file_registers_and_maps_back(tmp_path):
    path = tmp_path / "my_board.toml"
    path.write_text('extends = "cortex-m33"\nname = "my-board"\nsram_bytes = 131_072\n')
    built = target.register_profile_with_tvm(target.load_profile(str(path)))
    assert str(built) == str(tvm.target.Target("lowpower-my-board"))
    assert built.attrs["mcpu"] == "cortex-m33"
    assert target.profile_for_target(built).sram_bytes == 131_072


def test_other_targets_are_not_ours():
    llvm = tvm.target.Target("llvm")
    assert not target.is_lowpower_target(llvm)
    assert not target.is_lowpower_target(tvm.target.Target({"kind": "c", "mcpu": "cortex-m4"}))
    with pytest.raises(target.ProfileError, match="is not a lowpower target"):
        target.profile_for_target(llvm)


def test_lowpower_target_without_a_known_model_is_refused():
    stray = tvm.target.Target({"kind": "c", "keys": ["lowpower", "cpu"], "model": "unheard-of"})
    assert target.is_lowpower_target(stray)
    with pytest.raises(target.ProfileError, match="model 'unheard-of'"):
        target.profile_for_target(stray)
