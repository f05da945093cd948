"""Board support objects kept across bundles (packager.board_objects): an object is taken only when every input of
its compile is the same, and the test session's compiles share them (conftest.board_objects_once_per_session)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import cross_build_of, profile_build_config
from packager.board_objects import (BOARD_OBJECTS_VARIABLE, board_objects_folder, keep_board_objects, object_key,
                                    restore_board_objects)

SOURCE = "board/startup.c"
COMMAND = ("cc", "-O2", "-Iboard")
BUILD_DIR = "build-board"


def _bundle(folder: Path, source_text: str = "int start;\n", header_text: str = "#define BOARD 1\n") -> Path:
    """A bundle's folder with a board source, its header and the build's object of the source (and .su, .d)."""
    (folder / "board").mkdir(parents=True)
    (folder / SOURCE).write_text(source_text)
    (folder / "board" / "lp_board.h").write_text(header_text)
    (folder / "model.h").write_text("")
    return folder


def _built(bundle: Path, object_bytes: bytes) -> None:
    build = bundle / BUILD_DIR / "board"
    build.mkdir(parents=True)
    for suffix, text in ((".o", object_bytes), (".su", b"startup.c:1:1:main\t8\tstatic\n"), (".d", b"deps\n")):
        (build / f"startup{suffix}").write_bytes(text)


def test_an_object_is_kept_and_restored_with_its_stack_usage_and_dependency_files(tmp_path: Path) -> None:
    first, second, kept = _bundle(tmp_path / "a"), _bundle(tmp_path / "b"), tmp_path / "kept"
    _built(first, b"\x7fELF object")
    assert keep_board_objects(first, BUILD_DIR, [SOURCE], COMMAND, kept) == [SOURCE]
    assert keep_board_objects(first, BUILD_DIR, [SOURCE], COMMAND, kept) == []  # kept once
    assert restore_board_objects(second, BUILD_DIR, [SOURCE], COMMAND, kept) == [SOURCE]
    for suffix in (".o", ".su", ".d"):
        restored = second / BUILD_DIR / "board" / f"startup{suffix}"
        assert restored.read_bytes() == (first / BUILD_DIR / "board" / f"startup{suffix}").read_bytes()
        assert restored.stat().st_mtime_ns >= (second / SOURCE).stat().st_mtime_ns  # make takes it as up to date
        assert not os.path.samefile(restored, first / BUILD_DIR / "board" / f"startup{suffix}")


@pytest.mark.parametrize("change", ["flag", "compiler", "source", "header", "shadowing header"])
def test_an_object_compiled_from_other_inputs_is_not_taken(tmp_path: Path, change: str) -> None:
    first, kept = _bundle(tmp_path / "a"), tmp_path / "kept"
    _built(first, b"\x7fELF object")
    keep_board_objects(first, BUILD_DIR, [SOURCE], COMMAND, kept)
    other = _bundle(tmp_path / "b", "int begin;\n" if change == "source" else "int start;\n",
                    "#define BOARD 2\n" if change == "header" else "#define BOARD 1\n")
    if change == "shadowing header":  # found before the C library's by -Iboard
        (other / "board" / "stdint.h").write_text("")
    command = {"flag": ("cc", "-O3", "-Iboard"), "compiler": ("gcc-other", "-O2", "-Iboard")}.get(change, COMMAND)
    assert object_key(other, SOURCE, command) != object_key(first, SOURCE, COMMAND)
    assert restore_board_objects(other, BUILD_DIR, [SOURCE], command, kept) == []
    assert not (other / BUILD_DIR).exists()


def test_the_bundles_own_headers_are_no_input(tmp_path: Path) -> None:
    """Every model's bundle on a profile takes the same board objects: its headers (<model>.h) are named as no
    system header, which alone a board source's `#include <...>` could find in the bundle's folder."""
    first, other = _bundle(tmp_path / "a"), _bundle(tmp_path / "b")
    (other / "kws_ref_model.h").write_text("#define KWS 1\n")
    (other / "kws_ref_model_internal.h").write_text("")
    assert object_key(other, SOURCE, COMMAND) == object_key(first, SOURCE, COMMAND)


def test_without_a_folder_nothing_is_kept_nor_restored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _bundle(tmp_path / "a")
    _built(bundle, b"\x7fELF object")
    monkeypatch.delenv(BOARD_OBJECTS_VARIABLE, raising=False)
    assert board_objects_folder() is None
    assert keep_board_objects(bundle, BUILD_DIR, [SOURCE], COMMAND, None) == []
    assert restore_board_objects(bundle, BUILD_DIR, [SOURCE], COMMAND, None) == []


@pytest.mark.parametrize("profile", ["cortex-m4f", "rv32imc"])
def test_the_sessions_compiles_keep_each_board_object_they_built(compiled, profile: str) -> None:
    """The session's folder holds every board object of a compiled bundle (the profiling build's included),
    byte for byte the object its cross build linked."""
    bundle = compiled("tflm/hello_world_int8.tflite", profile)
    runner = profile_build_config(profile).emulated
    folder, cross_build = board_objects_folder(), cross_build_of(bundle)
    assert folder is not None and cross_build is not None
    command = runner.cross_compile_command(profile_build_config(profile))
    assert len(runner.board_sources()) >= 5
    for source in runner.board_sources():
        kept = folder / object_key(bundle.out_dir, source, command) / "object.o"
        built = cross_build / Path(source).with_suffix(".o")
        assert kept.read_bytes() == built.read_bytes(), source


def test_two_models_bundles_on_a_profile_take_the_same_board_objects(compiled) -> None:
    config = profile_build_config("cortex-m4f")
    runner = config.emulated
    hello, speech = (compiled(f"tflm/{model}.tflite", "cortex-m4f")
                     for model in ("hello_world_int8", "micro_speech_quantized"))
    for source in runner.board_sources():
        assert (object_key(hello.out_dir, source, runner.cross_compile_command(config))
                == object_key(speech.out_dir, source, runner.cross_compile_command(config))), source
