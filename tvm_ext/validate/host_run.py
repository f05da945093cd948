"""A built bundle run on the host on many samples: its sources built again with the host's C compiler in a
temporary copy (whatever the profile's compiler), with the profile's host-portable flags
(`packager.build_files.BuildConfig.on_host`: its optimisation level and defines), by the bundle's own Makefile
(`packager.build.make`), its
self-test program replaced by a small driver that reads each sample's inputs from stdin and writes its outputs
to stdout as raw bytes, in the bundle's own types.

The driver is written from the bundle's header macros alone (`<NAME>_INPUTk_TYPE`, `_ELEMENTS`), so it names no
tensor of the model: nothing from the model reaches C through it. A stateful bundle is reset before each sample
(every sample a first run, as the reference runtime runs it).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from packager.build_files import BuildConfig
from tvm_ext.validate.driver_c import io_buffers, run_one

RUN_TIMEOUT_SECONDS = 600


def host_make_variables(build: BuildConfig) -> dict[str, tuple[str, ...]]:
    """The bundle Makefile's variables for the host build of a bundle built by `build`: the host's compiler and
    archiver, the C standard and the profile's host-portable flags (`BuildConfig.on_host`), no device link flags,
    and its warnings left warnings (no -Werror: the bundle was checked when it was built)."""
    return {**build.on_host().make_variables(), "EXTRA_CFLAGS": ()}


class HostRunError(Exception):
    """The bundle could not be built or run on the host; one line saying why."""


def _driver_c(name: str, inputs: int, outputs: int, stateful: bool) -> str:
    lines = ["#include <stdio.h>", *io_buffers(name, inputs, outputs)]
    lines += ["int main(void) {", "  for (;;) {", "    int status;"]
    lines += [f"    if (fread(in{k}, 1, sizeof in{k}, stdin) != sizeof in{k}) {{ return {0 if k == 0 else 3}; }}"
              for k in range(inputs)]
    lines += run_one(name, inputs, outputs, stateful, 'fprintf(stderr, "run returned %d\\n", status); return 2;')
    lines += [f"    if (fwrite(out{k}, 1, sizeof out{k}, stdout) != sizeof out{k}) {{ return 3; }}"
              for k in range(outputs)]
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def run_on_host(bundle: Path, name: str, output_dtypes: list[np.dtype], output_shapes: list[tuple[int, ...]],
                cases: list[list[np.ndarray]], stateful: bool, build: BuildConfig) -> list[list[np.ndarray]]:
    """Each case's outputs from the bundle in folder `bundle` (C prefix `name`, built by `build`; one array per
    input in the bundle's input types), built again and run on the host; HostRunError (one line) when it
    cannot be."""
    from packager.build import BuildError, make

    with tempfile.TemporaryDirectory(prefix="tvm_ext_validate_") as folder:
        work = Path(folder) / "bundle"
        shutil.copytree(bundle, work, ignore=shutil.ignore_patterns("*.o", "*.a", "*.tar.gz", "selftest"))
        (work / "selftest.c").write_text(_driver_c(name, len(cases[0]), len(output_dtypes), stateful))
        try:
            make(work, "selftest", host_make_variables(build), timeout_s=RUN_TIMEOUT_SECONDS)
        except BuildError as err:
            raise HostRunError(f"the bundle does not build on the host with {build.on_host().cc}: "
                               f"{str(err)[:300]}") from err
        stdin = b"".join(array.tobytes() for case in cases for array in case)
        ran = subprocess.run([str(work / "selftest")], input=stdin, capture_output=True,
                             timeout=RUN_TIMEOUT_SECONDS)
        if ran.returncode != 0:
            raise HostRunError(f"the bundle's run on the host failed (exit {ran.returncode}): "
                               f"{ran.stderr.decode(errors='replace').strip()[:200]}")
    sizes = [int(np.prod(shape)) * np.dtype(dtype).itemsize for dtype, shape in zip(output_dtypes, output_shapes)]
    if len(ran.stdout) != sum(sizes) * len(cases):
        raise HostRunError(f"the bundle's run on the host wrote {len(ran.stdout)} bytes, not {sum(sizes) * len(cases)}")
    results, offset = [], 0
    for _ in cases:
        outputs = []
        for dtype, shape, size in zip(output_dtypes, output_shapes, sizes):
            outputs.append(np.frombuffer(ran.stdout[offset:offset + size], dtype=dtype).reshape(shape))
            offset += size
        results.append(outputs)
    return results
