"""Device profiles: the built-in files, user files (TOML, JSON, `extends`) and the one-line errors for bad ones."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import target
from target.loading import BUILTIN_DIR, FIELD_CHECKS

REPO_ROOT = Path(__file__).resolve().parents[2]

# The issue's list of profiles that must exist, and the emulated boards issue 7 names for them.
REQUIRED_PROFILES = {"lowpower", "cortex-m0plus", "cortex-m4f", "cortex-m7", "cortex-m33", "cortex-m55"}
BOARDS_FROM_THE_ISSUES = {
    "cortex-m4f": "mps2-an386",
    "cortex-m0plus": "mps2-an385",
    "cortex-m7": "mps2-an500",
    "cortex-m33": "mps2-an505",
}

M4F_OVERRIDE_TOML = """
# my board: an nRF52840 with part of its RAM taken by a radio stack
extends = "cortex-m4f"
name = "my-board"
sram_bytes = 196_608
cflags = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-Os"]
"""


def test_required_profiles_and_an_always_on_dsp_are_built_in():
    names = set(target.profile_names())
    assert REQUIRED_PROFILES <= names
    assert any(target.load_profile(name).simd == "hifi" for name in names)


@pytest.mark.parametrize("name", target.profile_names())
def test_builtin_file_gives_every_field_and_is_named_after_its_profile(name):
    path = BUILTIN_DIR / f"{name}.toml"
    table = tomllib.loads(path.read_text())
    # a built-in's one compute unit is its core, its one RAM region its SRAM
    assert set(table) == set(FIELD_CHECKS) - {"units", "ram_regions"}
    profile = target.load_profile(name)
    assert profile.name == path.stem
    assert profile.source == f"target/profiles/{name}.toml"
    assert profile.sram_bytes == table["sram_bytes"] and profile.flash_bytes == table["flash_bytes"]
    assert path.read_text().startswith("#"), "each built-in file opens with a comment naming its board facts"


def test_profile_fields_are_exactly_the_file_fields_plus_source():
    assert {f.name for f in dataclasses.fields(target.Profile)} == set(FIELD_CHECKS) | {"source"}


@pytest.mark.parametrize(("name", "board"), sorted(BOARDS_FROM_THE_ISSUES.items()))
def test_cortex_m_profiles_name_the_emulated_board_of_issue_7(name, board):
    assert target.load_profile(name).qemu_board == board


def test_generic_profile_assumes_no_fpu_and_builds_with_the_host_compiler():
    generic = target.load_profile("lowpower")
    assert (generic.fpu, generic.simd, generic.hardware_float) == ("none", "none", False)
    assert generic.c_compiler == "cc" and generic.qemu_board is None
    assert generic.tvm_tag == "lowpower"


def test_float_hardware_follows_the_fpu_field():
    assert not target.load_profile("cortex-m0plus").hardware_float
    m4f = target.load_profile("cortex-m4f")
    assert m4f.hardware_float and not m4f.hardware_double
    assert target.load_profile("cortex-m55").hardware_double


def test_profile_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.load_profile("cortex-m4f").sram_bytes = 1  # type: ignore[misc]


def test_tag_name_loads_the_same_profile_as_the_name():
    assert target.load_profile("lowpower-cortex-m4f") == target.load_profile("cortex-m4f")


def test_user_toml_extending_a_builtin_overrides_only_what_it_gives(tmp_path):
    path = tmp_path / "my_board.toml"
    path.write_text(M4F_OVERRIDE_TOML)
    mine = target.load_profile(str(path))
    base = target.load_profile("cortex-m4f")
    assert (mine.name, mine.sram_bytes, mine.cflags[-1]) == ("my-board", 196_608, "-Os")
    assert mine.source == str(path)
    unchanged = {f.name for f in dataclasses.fields(target.Profile)} - {"name", "sram_bytes", "cflags", "source"}
    assert {f: getattr(mine, f) for f in unchanged} == {f: getattr(base, f) for f in unchanged}
    assert mine.tvm_tag == "lowpower-my-board"


def test_user_json_profile_with_every_field_and_null_board(tmp_path):
    fields = tomllib.loads((BUILTIN_DIR / "cortex-m0plus.toml").read_text())
    fields.update(name="samd21-custom", sram_bytes=16_384, qemu_board=None)
    path = tmp_path / "samd21.json"
    path.write_text(json.dumps(fields))
    mine = target.load_profile(path)
    assert (mine.name, mine.sram_bytes, mine.qemu_board, mine.fpu) == ("samd21-custom", 16_384, None, "none")
    assert mine.cflags == tuple(fields["cflags"])


def test_json_profile_extends_a_toml_file_beside_it_and_name_defaults_to_the_file_name(tmp_path):
    (tmp_path / "my_board.toml").write_text(M4F_OVERRIDE_TOML)
    path = tmp_path / "my-board-lowram.json"
    path.write_text(json.dumps({"extends": "my_board.toml", "sram_bytes": 65_536, "int8_rounding": "single"}))
    mine = target.load_profile(str(path))
    assert (mine.name, mine.sram_bytes, mine.int8_rounding) == ("my-board-lowram", 65_536, "single")
    assert mine.cflags[-1] == "-Os"  # from the TOML file it extends
    assert mine.cpu == "cortex-m4"  # from the built-in that file extends


def _minimal(**changes: object) -> str:
    """A complete TOML profile (the generic one's fields) with `changes` applied; None drops a field."""
    table = tomllib.loads((BUILTIN_DIR / "lowpower.toml").read_text()) | {"name": "custom"} | changes
    lines = [f"{key} = {json.dumps(value)}" for key, value in table.items() if value is not None]
    return "\n".join(lines) + "\n"


BAD_FILES = [
    # (file name, content, text the one-line error must contain besides the file name)
    ("typo.toml", 'extends = "cortex-m4f"\nsram_kb = 64\n', "'sram_kb' (did you mean 'sram_bytes'?)"),
    ("units.toml", 'extends = "cortex-m4f"\nsram_bytes = "32K"\n', "field 'sram_bytes' must be a positive"),
    ("negative.toml", 'extends = "cortex-m4f"\nflash_bytes = -1\n', "field 'flash_bytes'"),
    ("boolean.toml", 'extends = "cortex-m4f"\nsram_bytes = true\n', "field 'sram_bytes'"),
    ("fpu.toml", 'extends = "cortex-m4f"\nfpu = "half"\n', "field 'fpu' must be one of 'none', 'single', 'double'"),
    ("simd.toml", 'extends = "cortex-m4f"\nsimd = "neon"\n', "field 'simd'"),
    ("round.toml", 'extends = "cortex-m4f"\nint8_rounding = "nearest"\n', "field 'int8_rounding'"),
    ("align.toml", 'extends = "cortex-m4f"\nalignment_bytes = 24\n', "field 'alignment_bytes' must be a power of two"),
    ("flags.toml", 'extends = "cortex-m4f"\ncflags = "-O2 -mthumb"\n', "field 'cflags' must be a list"),
    ("missing.toml", _minimal(cflags=None), "missing field 'cflags'"),
    ("badname.toml", _minimal(name="My Board"), "field 'name'"),
    ("syntax.toml", 'extends = "cortex-m4f"\nsram_bytes = \n', "not valid TOML"),
    ("syntax.json", '{"extends": "cortex-m4f",}', "not valid JSON"),
    ("list.json", '["cortex-m4f"]', "one table of fields"),
    ("base.toml", 'extends = "cortex-m99"\n', "field 'extends': unknown profile 'cortex-m99'"),
    ("taken.toml", 'extends = "cortex-m4f"\nname = "cortex-m7"\n', "field 'name' 'cortex-m7' is a built-in"),
    (
        "abi.toml",
        'extends = "cortex-m0plus"\ncflags = ["-mcpu=cortex-m4", "-mfloat-abi=hard"]\n',
        "field 'cflags' asks -mfloat-abi=hard but 'fpu' is 'none'",
    ),
    ("softfp.toml", _minimal(cflags=["-mfloat-abi=softfp"]), "field 'cflags' asks -mfloat-abi=softfp"),
    ("softabi.toml", 'extends = "cortex-m4f"\ncflags = ["-mfloat-abi=soft"]\n', "field 'cflags' asks -mfloat-abi=soft"),
]


@pytest.mark.parametrize(("file_name", "content", "expected"), BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_bad_profile_file_gives_one_line_naming_file_and_field(tmp_path, file_name, content, expected):
    path = tmp_path / file_name
    path.write_text(content)
    with pytest.raises(target.ProfileError) as error:
        target.load_profile(str(path))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert expected in message


def test_bad_value_from_an_extended_file_names_that_file(tmp_path):
    (tmp_path / "base.toml").write_text('extends = "cortex-m4f"\nname = "base"\nsimd = "neon"\n')
    (tmp_path / "child.json").write_text('{"extends": "base.toml", "sram_bytes": 65536}')
    with pytest.raises(target.ProfileError) as error:
        target.load_profile(str(tmp_path / "child.json"))
    assert str(error.value).startswith(f"{tmp_path / 'base.toml'}: field 'simd' must be one of")


def test_extends_cycle_is_reported(tmp_path):
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    with pytest.raises(target.ProfileError, match=r"a\.toml: field 'extends' makes a cycle"):
        target.load_profile(str(tmp_path / "a.toml"))


def test_missing_file_and_unknown_name_are_one_line_errors(tmp_path):
    with pytest.raises(target.ProfileError, match=r"nowhere\.toml: cannot read the profile file"):
        target.load_profile(str(tmp_path / "nowhere.toml"))
    with pytest.raises(target.ProfileError) as error:
        target.load_profile("cortex-m99")
    assert "\n" not in str(error.value)
    assert "unknown profile 'cortex-m99'" in str(error.value) and "cortex-m4f" in str(error.value)


def test_importing_target_and_using_profiles_does_not_import_tvm():
    script = (
        "import sys, target\n"
        "profile = target.load_profile('cortex-m4f')\n"
        "ram = target.RamUse(1, 0, 0, 0, 0, target.StackSource.PENDING)\n"
        "target.check_fits(profile, 'm', ram, 1)\n"
        "flash = target.FlashUse(1, 2, 0, target.FlashSource.MEASURED)\n"
        "target.check_fits(profile, 'm', ram, flash)\n"
        "target.Headroom(profile, ram, flash).manifest_entry()\n"
        "assert 'tvm' not in sys.modules, sorted(m for m in sys.modules if m.startswith('tvm'))\n"
        "target.register_with_tvm\n"
        "assert 'tvm' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, check=True)


def test_readme_table_agrees_with_the_profile_files():
    rows = [line for line in (REPO_ROOT / "target" / "README.md").read_text().splitlines() if line.startswith("| `")]
    table = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if len(cells) == 7:  # the profiles table, not the fields table
            table[cells[0].strip("`")] = cells
    assert set(table) == set(target.profile_names())
    for name, (_, _, sizes, fpu, simd, _, board) in table.items():
        profile = target.load_profile(name)
        sram, flash = (int(size.replace(",", "")) for size in sizes.split(" / "))
        assert (sram, flash, fpu, simd) == (profile.sram_bytes, profile.flash_bytes, profile.fpu, profile.simd)
        assert board == (profile.qemu_board or "none")
