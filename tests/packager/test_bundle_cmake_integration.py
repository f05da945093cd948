"""A bundle inside the user's own CMake project (issue 32, item 7): `add_subdirectory` gives the library alone
(the self-test only on request), and a Cortex-M bundle configured without its toolchain file stops at configure
time naming the file to pass, not at the build with the host compiler's `unrecognized command-line option`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import example_model
from packager.build_files import selftest_option

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs CMake")


def _user_project(folder: Path, bundle_dir: Path, model: str) -> Path:
    """A firmware project of the user's that adds the bundle with add_subdirectory and links its library."""
    folder.mkdir()
    (folder / "main.c").write_text(f'#include "{model}.h"\nint main(void) {{ return {model}_run == 0; }}\n')
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(firmware C)\n"
        f"add_subdirectory({bundle_dir} bundle)\n"
        f"add_executable(firmware main.c)\ntarget_link_libraries(firmware PRIVATE {model})\n")
    return folder


def _targets(build: Path) -> str:
    return subprocess.run(["cmake", "--build", str(build), "--target", "help"], capture_output=True, text=True,
                          check=True).stdout


def test_add_subdirectory_builds_the_library_without_the_self_test_unless_asked(compiled, tmp_path):
    bundle = compiled(example_model)
    model = bundle.plan.model
    project = _user_project(tmp_path / "firmware", bundle.out_dir, model)
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(project), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert (build / "firmware").is_file()
    assert f"{model}_selftest" not in _targets(build)
    assert not list(build.rglob(f"{model}_selftest"))
    subprocess.run(["cmake", "-S", str(project), "-B", str(build), f"-D{selftest_option(model)}=ON"], check=True,
                   capture_output=True)
    assert f"{model}_selftest" in _targets(build)


def test_the_bundle_as_top_level_project_still_builds_its_self_test(compiled, tmp_path):
    bundle = compiled(example_model)
    build = tmp_path / "build"
    subprocess.run(["cmake", "-S", str(bundle.out_dir), "-B", str(build)], check=True, capture_output=True)
    assert f"{bundle.plan.model}_selftest" in _targets(build)


def test_a_cortex_m_bundle_without_its_toolchain_file_names_the_file_at_configure_time(compiled, tmp_path):
    bundle = compiled(example_model, "cortex-m4f")
    configure = subprocess.run(["cmake", "-S", str(bundle.out_dir), "-B", str(tmp_path / "host")],
                               capture_output=True, text=True)
    said = " ".join((configure.stdout + configure.stderr).split())  # CMake wraps its error text
    assert configure.returncode != 0
    toolchain = bundle.out_dir / "cortex_m" / "arm-none-eabi.cmake"
    assert f"-DCMAKE_TOOLCHAIN_FILE={toolchain}" in said, said
    assert "unrecognized command-line option" not in said


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")
def test_a_cortex_m_bundle_with_its_toolchain_file_configures_and_builds(compiled, tmp_path):
    bundle = compiled(example_model, "cortex-m4f")
    build = tmp_path / "device"
    subprocess.run(["cmake", "-S", str(bundle.out_dir), "-B", str(build),
                    f"-DCMAKE_TOOLCHAIN_FILE={bundle.out_dir / 'cortex_m' / 'arm-none-eabi.cmake'}"],
                   check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    assert (build / f"lib{bundle.plan.model}.a").is_file()
