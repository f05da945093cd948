"""The library's order-free sources compiled beside the memory planning and the packaging (--jobs 2 or more).

The internal header, the kernels' C, the weights' C (`packager.bundle.library_sources`) and the Makefile
(`packager.build_files.write_makefile`) depend neither on the call order nor on the memory plan. Once the
code generation is done, `compiling_early` writes them into the staging folder and starts one `make` per
object there (the bundle's own Makefile rule, `packager.build.make_command`): the kernels' file, the
largest compile of the build, then runs while this process plans the memory and writes the other files. On
an emulated board's profile the objects are compiled with their stack usage files (`packager.build
.library_variables`), as the build compiles them: the build links the self-test ELF from them too
(`packager.build.share_library_objects`), so no source is compiled twice.

`EarlyObjects.settle()`, called before the build, waits for those makes and keeps an object only when its
make succeeded and every file it was made from is still byte-identical on disk (the packager rewrote each
with the same text); a kept object's times are set to now, so that the build's `make` takes it as up to
date. Anything else is deleted and the build's `make` compiles it again (and reports its error). A kept
object is the one the build's `make` would have compiled, by the same command: the library is the same
for any number of jobs.

When the `with` block ends before `settle()` (an error, an interrupt), the makes still running are ended
and waited for; the staging folder they wrote into is the caller's to delete.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packager.build import make_command
from packager.build_files import BuildConfig
from packager.files import replace_file
from tvm_ext.processes.command_process import interrupts_held_back

SOURCE_SUFFIX = ".c"


@dataclass
class EarlyObjects:
    """The makes started in `folder`, by object file name, and the files (name -> text) they were made from."""

    folder: Path
    makes: dict[str, subprocess.Popen]
    sources: dict[str, str]

    def settle(self) -> list[str]:
        """Wait for every make; keep the objects that built when every file written early is unchanged since,
        deleting the others (see the module's docstring). Returns the names of the objects kept."""
        unchanged = all(_holds(self.folder / name, text) for name, text in self.sources.items())
        kept = []
        for name, process in self.makes.items():
            built = process.wait() == 0
            with interrupts_held_back():  # an object is either kept and up to date, or gone
                if built and unchanged:
                    os.utime(self.folder / name)
                    kept.append(name)
                else:
                    (self.folder / name).unlink(missing_ok=True)
        return kept

    def stop(self) -> None:
        """End the makes still running (with their compilers), and wait for every one."""
        for process in self.makes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.makes.values():
            process.wait()


def eligible(config: BuildConfig) -> bool:
    """Whether the build compiles the library's objects with the Makefile's own variables, so that an early
    object is the build's: the host's or an emulated board's build, with no compute units (whose kernel
    files follow the units assigned after the planning)."""
    return (config.runs_on_host or config.emulated is not None) and not config.units


def object_makes(sources: list[str], variables: dict[str, tuple[str, ...]] | None = None) -> dict[str, list[str]]:
    """The objects the build compiles from the C files among `sources` (file names relative to the bundle),
    each with the `make` command of the bundle's Makefile that compiles it as the build does (with the
    Makefile `variables` the build overrides, `packager.build.library_variables`)."""
    return {f"{name.removesuffix(SOURCE_SUFFIX)}.o": make_command(f"{name.removesuffix(SOURCE_SUFFIX)}.o", variables)
            for name in sources if name.endswith(SOURCE_SUFFIX)}


@contextmanager
def compiling_early(folder: Path, sources: dict[str, str],
                    variables: dict[str, tuple[str, ...]] | None = None) -> Iterator[EarlyObjects]:
    """Write `sources` (file name -> text, with the Makefile, and for an emulated board's profile its runner's
    build rule files) into `folder` and start one `make` for each object of `object_makes` (with the Makefile
    `variables` the build overrides), each in its own process group. On leaving the block the makes still
    running are ended and waited for."""
    for name, text in sources.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        replace_file(folder / name, text)
    early = EarlyObjects(folder, {}, sources)
    try:
        for name, command in object_makes(list(sources), variables).items():
            with interrupts_held_back():  # a started make is in `early.makes`, to be ended with the block
                early.makes[name] = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL,
                                                     stderr=subprocess.DEVNULL, start_new_session=True)
        yield early
    finally:
        with interrupts_held_back():
            early.stop()


def _holds(path: Path, text: str) -> bool:
    """Whether the file at `path` holds exactly `text` (as `replace_file` wrote it)."""
    try:
        return path.read_text(encoding="utf-8") == text
    except FileNotFoundError:
        return False
