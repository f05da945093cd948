"""A profile's RAM regions (`ram_regions`, target/memory_region.py): held to their grammar like every field, each
refusal one ProfileError line naming the file and the field (and the command exits 2 with that line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import target
from conftest import run_cli
from hostile_profiles import FLAG_INJECTIONS, with_marker, write_profile
from target.memory_region import MAX_REGIONS, RamRegion

SRAM = 524_288  # lowpower's
TWO = [{"name": "dtcm", "bytes": 65_536}, {"name": "sram", "bytes": SRAM - 65_536}]


def refusal(path: Path) -> str:
    """The one line loading `path` is refused with (it starts with the file's path)."""
    with pytest.raises(target.ProfileError) as error:
        target.load_profile(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    return message


def test_listed_regions_load_fastest_first_and_none_listed_is_the_whole_sram(tmp_path):
    path = write_profile(tmp_path / "two.json", {"extends": "lowpower", "name": "two", "ram_regions": TWO})
    assert target.load_profile(path).memory_regions == (RamRegion("dtcm", 65_536), RamRegion("sram", SRAM - 65_536))
    assert target.load_profile("lowpower").memory_regions == (RamRegion("sram", SRAM),)
    assert all(target.load_profile(name).ram_regions == () for name in target.profile_names())


@pytest.mark.parametrize(("regions", "expected"), [
    ([], "field 'ram_regions' must be a list of 1 to"),
    ("dtcm", "field 'ram_regions' must be a list of 1 to"),
    ([{"name": f"r{i}", "bytes": SRAM // (MAX_REGIONS + 1)} for i in range(MAX_REGIONS + 1)],
     f"field 'ram_regions' must be a list of 1 to {MAX_REGIONS}"),
    ([TWO[0], {"name": "sram"}], "field 'ram_regions' region 'sram': missing field 'bytes'"),
    ([TWO[0], TWO[1] | {"speed": 2}], "field 'ram_regions' region 'sram': unknown field 'speed'"),
    ([TWO[0] | {"bytes": 0}, TWO[1]], "field 'ram_regions' region 'dtcm': field 'bytes' must be a positive whole"),
    ([TWO[0] | {"bytes": 1.5}, TWO[1]], "field 'bytes'"),
    ([TWO[0] | {"name": "DTCM"}, TWO[1]], "field 'name' must be a lowercase C identifier"),
    ([TWO[0] | {"name": "1dtcm"}, TWO[1]], "field 'name' must be a lowercase C identifier"),
    ([TWO[0] | {"name": "d" * 33}, TWO[1]], "field 'name'"),
    ([TWO[0], TWO[1] | {"name": "dtcm"}], "field 'ram_regions' names the same region twice"),
    ([TWO[0], TWO[1] | {"bytes": SRAM}], "field 'ram_regions' adds up to 589,824 B but 'sram_bytes' is 524,288 B"),
], ids=lambda case: json.dumps(case)[:40] if not isinstance(case, str) else None)
def test_bad_regions_are_refused_in_one_line_naming_the_field(tmp_path, regions, expected):
    path = write_profile(tmp_path / "bad.json", {"extends": "lowpower", "name": "bad", "ram_regions": regions})
    assert expected in refusal(path)


@pytest.mark.parametrize("injection", FLAG_INJECTIONS.values(), ids=list(FLAG_INJECTIONS))
def test_a_region_name_with_make_shell_or_cmake_syntax_is_refused(tmp_path, injection):
    name = with_marker(injection, tmp_path / "marker")
    path = write_profile(tmp_path / "bad.json", {"extends": "lowpower", "name": "bad",
                                                 "ram_regions": [TWO[0] | {"name": name}, TWO[1]]})
    message = refusal(path)
    assert "field 'ram_regions'" in message and "field 'name'" in message
    assert not (tmp_path / "marker").exists()


def test_the_command_exits_2_with_one_line_naming_the_field(tmp_path):
    path = write_profile(tmp_path / "bad.json", {"extends": "lowpower", "name": "bad",
                                                 "ram_regions": [TWO[0], TWO[1] | {"bytes": 1}]})
    proc = run_cli("--example", "--target", str(path), "--no-build", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "field 'ram_regions' adds up to" in lines[0], proc.stderr


def test_a_last_region_too_small_for_its_part_is_refused_though_the_sram_total_fits(tmp_path):
    """The example model on lowpower: its fast region (8,192 B) takes 7,904 B of arena; the rest of the RAM
    (18,728 B with --no-build's stack bound: 1,024 B of frames + a kernel's 16 B of accumulators) must fit the last
    region, which has 228 B too few, while the total
    fits sram_bytes."""
    path = write_profile(tmp_path / "tight.json", {
        "extends": "lowpower", "name": "tight", "sram_bytes": 26_692,
        "ram_regions": [{"name": "fast", "bytes": 8_192}, {"name": "slow", "bytes": 18_500}]})
    proc = run_cli("--example", "--target", str(path), "--no-build", "-o", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.endswith("RAM needs 18,728 B in the last region slow (arena 23,584 B + inputs 1,960 B + outputs 48 B "
                         "+ state 0 B + stack 1,040 B counted: frames 1,024 B (the profile's stack_bound_bytes) + 16 B "
                         "of the kernel example_kws_cnn_conv2d_add_relu_3x3_s1_49x10x8's stack arrays, less 7,904 B of "
                         "arena in faster regions) but tight's slow has 18,500 B (228 B over)"), line
