"""Profiles are untrusted files (issue 26, section 2): the loader holds every field to its grammar
(target/field_grammar.py, target/README.md) and reads only small regular UTF-8 text files. Every refusal is one
ProfileError line naming the file and the field. No TVM here: only `target` is imported (and a subprocess for
the files that would block or never end on a loader that just reads them)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import target
from hostile_profiles import FLAG_INJECTIONS, TOOL_INJECTIONS, with_marker, write_profile
from target.field_grammar import MAX_ALIGNMENT_BYTES, MAX_FLAGS
from target.loading import MAX_EXTENDS_DEPTH
from target.profile_file import MAX_PROFILE_FILE_BYTES

REPO = Path(__file__).resolve().parents[2]
HOST_UNIT = {"name": "host", "c_compiler": "cc", "cflags": ["-O2"]}


def refusal(path: Path) -> str:
    """The one line `target.load_profile(path)` refuses the file with (it must start with the file's path)."""
    with pytest.raises(target.ProfileError) as error:
        target.load_profile(path)
    message = str(error.value)
    assert "\n" not in message and "\r" not in message, message
    assert message.startswith(f"{path}: "), message
    return message


def hostile_fields(field: str, value: str) -> dict:
    """A profile extending lowpower with `value` in `field` ("units.<field>": in a compute unit)."""
    if field.startswith("units."):
        return {"extends": "lowpower", "name": "hostile", "units": [HOST_UNIT | {field[len("units."):]: (
            [value] if field == "units.cflags" else value)}]}
    return {"extends": "lowpower", "name": "hostile", field: [value] if field in ("cflags", "ldflags") else value}


FLAG_FIELDS = ("cflags", "ldflags", "units.cflags")
TOOL_FIELDS = ("c_compiler", "binutils_prefix", "units.c_compiler")
NAME_FIELDS = ("name", "cpu", "arch", "qemu_board", "units.name")
TEXT_FIELDS = ("description", "memory_source")


@pytest.mark.parametrize("field", FLAG_FIELDS)
@pytest.mark.parametrize("injection", FLAG_INJECTIONS, ids=list(FLAG_INJECTIONS))
def test_a_flag_with_make_cmake_or_shell_syntax_is_refused_naming_the_field(tmp_path, field, injection):
    path = write_profile(tmp_path / "hostile.json",
                         hostile_fields(field, with_marker(FLAG_INJECTIONS[injection], tmp_path / "marker")))
    message = refusal(path)
    assert f"field '{field.split('.')[0]}'" in message and (field != "units.cflags" or "field 'cflags'" in message)


@pytest.mark.parametrize("field", TOOL_FIELDS)
@pytest.mark.parametrize("injection", TOOL_INJECTIONS, ids=list(TOOL_INJECTIONS))
def test_a_tool_that_is_not_a_plain_name_or_absolute_path_is_refused(tmp_path, field, injection):
    path = write_profile(tmp_path / "hostile.json",
                         hostile_fields(field, with_marker(TOOL_INJECTIONS[injection], tmp_path / "marker")))
    assert f"field '{field.split('.')[-1]}'" in refusal(path)


@pytest.mark.parametrize("field", NAME_FIELDS + TEXT_FIELDS)
@pytest.mark.parametrize("value", ["a$(shell touch marker)", "a\nb", "a`touch marker`", 'a"b', "a\\b", "x" * 300],
                         ids=["make-shell", "newline", "backticks", "quote", "backslash", "too-long"])
def test_names_and_text_lines_refuse_make_shell_and_cmake_characters(tmp_path, field, value):
    path = write_profile(tmp_path / "hostile.json", hostile_fields(field, value))
    assert f"field '{field.split('.')[-1]}'" in refusal(path)


@pytest.mark.parametrize(("fields", "expected"), [
    ({"cflags": ["-O2"] * (MAX_FLAGS + 1)}, "field 'cflags' must be a list of at most"),
    ({"cflags": ["-I/usr/include"]}, "field 'cflags' has the flag '-I/usr/include'"),
    ({"ldflags": ["-Wl,-Map=/home/someone/.bashrc"]}, "field 'ldflags' has the flag"),
    ({"cflags": ["O2"]}, "field 'cflags' has the flag 'O2'"),
    ({"cflags": ["-" + "O" * 128]}, "field 'cflags' has the flag"),
    ({"c_compiler": "python3"}, "field 'c_compiler' must be a C compiler's command"),
    ({"c_compiler": "bin/cc"}, "field 'c_compiler'"),
    ({"binutils_prefix": "t"}, "field 'binutils_prefix'"),
    ({"sram_bytes": 2**40}, "field 'sram_bytes' must be a positive whole number of bytes, at most"),
    ({"flash_bytes": 0}, "field 'flash_bytes'"),
    ({"subgraph_bytes": 2**33}, "field 'subgraph_bytes'"),
    ({"sram_bytes": 1.5e6}, "field 'sram_bytes'"),
    ({"units": [HOST_UNIT | {"default_instructions_per_mac": 1e300}]}, "field 'default_instructions_per_mac'"),
    ({"units": [HOST_UNIT | {"instructions_per_mac": {"Conv": float("inf")}}]}, "field 'instructions_per_mac'"),
    ({"units": [HOST_UNIT | {"operators": ["Conv;x"]}]}, "field 'operators'"),
    ({"units": [HOST_UNIT | {"name": "ünit"}]}, "field 'name'"),
    ({"units": [HOST_UNIT | {"name": f"u{i}"} for i in range(17)]}, "field 'units' must be a list of 1 to 16"),
], ids=lambda case: json.dumps(case)[:40] if isinstance(case, dict) else None)
def test_values_out_of_their_grammar_or_range_are_refused(tmp_path, fields, expected):
    path = write_profile(tmp_path / "bad.json", {"extends": "lowpower", "name": "bad"} | fields)
    assert expected in refusal(path)


@pytest.mark.parametrize("alignment", [0, 1, 2, 4, 24, MAX_ALIGNMENT_BYTES * 2, 2**40, -16, True, 16.0])
def test_an_absurd_alignment_is_refused(tmp_path, alignment):
    path = write_profile(tmp_path / "align.json", {"extends": "lowpower", "name": "align",
                                                     "alignment_bytes": alignment})
    assert "field 'alignment_bytes' must be a power of two from 8 to 4096" in refusal(path)


def test_ordinary_flags_tools_and_numbers_of_real_boards_load(tmp_path):
    """What real profiles need stays allowed: core and ABI flags, defines, linker options, specs, a versioned
    or absolute compiler, an absolute binutils prefix, cache-line and page alignments, a 4 GiB memory."""
    fields = {
        "extends": "cortex-m4f", "name": "real-board.v2",
        "cflags": ["-mcpu=cortex-m55+nomve", "-mthumb", "-mfloat-abi=hard", "-O2", "-DARM_MATH_CM4",
                   "-DBOARD_REV=2", "-fno-common", "--param=max-inline-insns-single=100", "-std=gnu99"],
        "ldflags": ["-mcpu=cortex-m4", "--specs=nano.specs", "-Wl,--gc-sections,-z,noexecstack"],
        "c_compiler": "/opt/arm-gnu-toolchain-13.2.rel1/bin/arm-none-eabi-gcc",
        "binutils_prefix": "/opt/arm-gnu-toolchain-13.2.rel1/bin/arm-none-eabi-",
        "alignment_bytes": MAX_ALIGNMENT_BYTES, "flash_bytes": 2**32, "cpu": "cortex-m55+nomve",
        "description": "A board (rev. 2): 256 KiB RAM; #1 in its class, 100% tested",
    }
    profile = target.load_profile(write_profile(tmp_path / "real-board.json", fields))
    assert (profile.cflags, profile.c_compiler, profile.alignment_bytes) == (
        tuple(fields["cflags"]), fields["c_compiler"], MAX_ALIGNMENT_BYTES)
    for compiler in ("cc", "gcc-12", "clang", "clang-17", "xt-clang", "armclang"):
        write_profile(tmp_path / "c.json", {"extends": "lowpower", "name": "c", "c_compiler": compiler})
        assert target.load_profile(tmp_path / "c.json").c_compiler == compiler


def test_every_built_in_profile_holds_to_the_grammar():
    for name in target.profile_names():
        target.load_profile(name)


# --- The file itself -------------------------------------------------------------------------------------


def load_in_a_subprocess(path: Path | str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    """`target.load_profile(path)` in a fresh Python with 1 GiB of address space and `timeout_s`: a loader
    that blocks on a FIFO or reads /dev/zero fails this test instead of hanging or exhausting the machine."""
    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    script = ("import sys, target\n"
              "try:\n    target.load_profile(sys.argv[1])\n"
              "except target.ProfileError as err:\n    print(err, file=sys.stderr); sys.exit(2)\n")
    try:
        return subprocess.run([sys.executable, "-c", script, str(path)], cwd=REPO, capture_output=True, text=True,
                              timeout=timeout_s, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading {path} did not end within {timeout_s} s")


def assert_refused_in_a_subprocess(path: Path | str, expected: str) -> None:
    proc = load_in_a_subprocess(path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"{path}: ") and expected in proc.stderr, \
        proc.stderr


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "board.toml"
    os.mkfifo(fifo)
    assert_refused_in_a_subprocess(fifo, "it is a FIFO, not a regular file")


def test_a_device_that_never_ends_is_refused_without_reading_it(tmp_path):
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    assert_refused_in_a_subprocess(zero, "it is a character device, not a regular file")
    assert_refused_in_a_subprocess("/dev/zero", "not a profile file")


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "board.toml").mkdir()
    assert "it is a folder, not a regular file" in refusal(tmp_path / "board.toml")


@pytest.mark.parametrize(("content", "expected"), [
    (b"\xff\xfe\x00n\x00a\x00m\x00e", "not UTF-8 text (byte 0)"),
    ('name = "caf\u00e9"\n'.encode("latin-1"), "not UTF-8 text (byte 11)"),
    (b'name = "x"\n\x00\x01\x02\x03', "holds a NUL byte (byte 11)"),
    (bytes(range(256)) * 4, "not UTF-8 text"),
])
def test_a_binary_or_non_utf8_file_is_refused(tmp_path, content, expected):
    path = tmp_path / "board.toml"
    path.write_bytes(content)
    assert expected in refusal(path)


def test_a_file_larger_than_the_limit_is_refused_after_reading_only_the_limit(tmp_path):
    path = tmp_path / "board.toml"
    path.write_text('extends = "lowpower"\n' + "# padding\n" * (MAX_PROFILE_FILE_BYTES // 10))
    assert f"larger than {MAX_PROFILE_FILE_BYTES:,} bytes" in refusal(path)


@pytest.mark.parametrize(("file_name", "content", "expected"), [
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("deep.toml", "a = " + "[" * 30_000 + "]" * 30_000, "not valid TOML"),
    ("long.json", '{"sram_bytes": ' + "9" * 5000 + "}", "not valid JSON"),
    ("long.toml", "sram_bytes = " + "9" * 5000, "not valid TOML"),
])
def test_a_document_too_deep_or_an_integer_too_long_is_one_line(tmp_path, file_name, content, expected):
    path = tmp_path / file_name
    path.write_text(content[:MAX_PROFILE_FILE_BYTES])
    assert expected in refusal(path)


@pytest.mark.parametrize("name", ["model.tflite", "model.onnx", "board"])
def test_a_file_without_a_profile_suffix_is_refused(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(64))
    assert "not a profile file (a profile is a .toml or .json file)" in refusal(path)


def test_a_built_in_name_is_the_built_in_even_beside_a_file_of_that_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("cortex-m4f").write_text("not a profile")
    assert target.load_profile("cortex-m4f").source == "target/profiles/cortex-m4f.toml"


def test_an_extends_chain_longer_than_the_limit_is_refused_naming_the_file_given(tmp_path):
    files = [tmp_path / f"level{i}.json" for i in range(MAX_EXTENDS_DEPTH + 2)]
    for level, path in enumerate(files):
        base = files[level + 1].name if level + 1 < len(files) else "lowpower"
        write_profile(path, {"extends": base, "name": f"level{level}"})
    assert target.load_profile(files[2]).name == "level2"  # MAX_EXTENDS_DEPTH steps: allowed
    assert f"field 'extends' makes a chain of more than {MAX_EXTENDS_DEPTH} profile files" in refusal(files[0])


def test_an_extends_cycle_through_a_json_and_a_toml_file_is_refused(tmp_path):
    write_profile(tmp_path / "a.json", {"extends": "b.toml"})
    (tmp_path / "b.toml").write_text('extends = "a.json"\nsram_bytes = 1024\n')
    assert "field 'extends' makes a cycle back to this file" in refusal(tmp_path / "a.json")
    write_profile(tmp_path / "self.json", {"extends": "self.json"})
    assert "makes a cycle" in refusal(tmp_path / "self.json")
