"""Write every file of a bundle into a folder (no building: see packager.build)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
import numpy as np

from backends.backend import HelperLibrary
from memory_planner.api import Buffer, MemoryPlan
from memory_planner.picture import arenas_svg
from memory_planner.plan import ExecutionPlan, KernelSignature
from memory_planner.regions import RegionArena
from packager.aot_entry import write_model_c
from packager.c_lexical import check_c_text
from packager.build_files import BuildConfig, write_cmakelists, write_makefile
from packager.files import replace_file
from packager.header import write_header
from packager.internal_header import write_internal_header
from packager.io_names import IoTensor, io_tensors
from packager.selftest import TestVectors, write_selftest
from packager.unit_libraries import unit_kernel_source
from packager.weights import write_weights


@dataclass
class BundleInputs:
    """Everything the packager needs; no TVM objects.

    `input_names`/`output_names` are the model's own names for its inputs/outputs (for the API and
    comments); `alignment` is the arena's and weights' alignment in bytes.
    """

    plan: ExecutionPlan
    memory: MemoryPlan
    buffers: list[Buffer]
    kernels_c: str
    kernel_signatures: tuple[KernelSignature, ...]  # every kernel `kernels_c` defines
    constants: dict[str, np.ndarray]
    vectors: TestVectors
    config: BuildConfig
    input_names: list[str]
    output_names: list[str]
    requantize_roundings: tuple[str, ...] = ()  # the packager.fixed_point_c helpers `kernels_c` calls
    helper_libraries: tuple[HelperLibrary, ...] = ()  # the backend helper libraries `kernels_c` calls
    signal_helpers: tuple[str, ...] = ()  # the packager.signal_c helpers `kernels_c` calls (C names)
    alignment: int = 16
    io_in_arena: bool = False  # the memory plan places the model's inputs and outputs in the arena
    kernels_c_by_unit: dict[str, str] = field(default_factory=dict)  # unit -> its kernels' C, when units are listed
    # every RAM region's arena, fastest first, when the profile lists several (memory_planner.regions; `memory`
    # and `buffers` are then the last region's); () for one region
    regions: tuple[RegionArena, ...] = ()


def write_bundle(out_dir: Path, bundle: BundleInputs) -> list[Path]:
    """Write the bundle's source and build files into `out_dir`; return their paths. manifest.json is
    written once the bundle is built and self-tested (`packager.finish.finish_bundle`)."""
    plan, m = bundle.plan, bundle.plan.model
    inputs, outputs = bundle_io(bundle)
    arena = bundle.memory.arena_bytes
    block = weights_block(bundle.config, bool(bundle.regions))
    files = {
        f"{m}.h": write_header(plan, inputs, outputs, arena, bundle.alignment, bundle.regions),
        **library_sources(plan, kernel_files(m, bundle), bundle.kernel_signatures, bundle.requantize_roundings,
                          bundle.helper_libraries, bundle.constants, bundle.alignment, bundle.signal_helpers,
                          sections=bool(bundle.regions), block=block),
        f"{m}_model.c": write_model_c(plan, inputs, outputs, bundle.memory.offsets, bundle.buffers, arena, bundle.alignment,
                                      regions=bundle.regions, weights_block=block),
        "selftest.c": write_selftest(plan, inputs, outputs, bundle.vectors),
        "Makefile": write_makefile(m, bundle.config),
        "CMakeLists.txt": write_cmakelists(m, bundle.config),
        "memory_plan.svg": arenas_svg(bundle.buffers, bundle.memory, bundle.regions),
    }
    runner = bundle.config.emulated
    profiled = runner.profiled_model_source(m) if runner is not None else None
    if profiled is not None:
        files[profiled] = write_model_c(plan, inputs, outputs, bundle.memory.offsets, bundle.buffers,
                                        arena, bundle.alignment, profile_calls=True, regions=bundle.regions,
                                        weights_block=block)
    return write_checked_files(out_dir, files, m, bundle.config)


def write_checked_files(out_dir: Path, files: dict[str, str], name: str, config: BuildConfig) -> list[Path]:
    """Write `files` (file name -> text) into `out_dir`, after the emulated runner's support files for the
    bundle `name` built with `config`; return their paths. Every C file is checked first (check_c_text raises
    UnsafeCError, an internal error, before anything is written)."""
    for file_name, text in files.items():
        if file_name.endswith((".c", ".h")):
            check_c_text(file_name, text)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [] if config.emulated is None else config.emulated.support_files(out_dir, name, config)
    for file_name, text in files.items():
        replace_file(out_dir / file_name, text)
        paths.append(out_dir / file_name)
    return paths


def bundle_io(bundle: BundleInputs) -> tuple[list[IoTensor], list[IoTensor]]:
    """The bundle's inputs and outputs as its header names them (with their arena offsets when planned there)."""
    plan = bundle.plan
    offsets = bundle.memory.offsets if bundle.io_in_arena else None
    return (io_tensors(plan, plan.inputs, bundle.input_names, "input", offsets),
            io_tensors(plan, plan.outputs, bundle.output_names, "output", offsets))


def library_sources(plan: ExecutionPlan, kernel_files: dict[str, str], kernel_signatures: tuple[KernelSignature, ...],
                    requantize_roundings: tuple[str, ...], helper_libraries: tuple[HelperLibrary, ...],
                    constants: dict[str, np.ndarray],
                    alignment: int, signal_helpers: tuple[str, ...] = (), sections: bool = False,
                    block: bool = False) -> dict[str, str]:
    """The library's files that neither the call order nor the memory plan changes, by file name: the
    internal header (with the helpers the kernels call), the kernel sources (`kernel_files`: file name -> the
    kernels' C) and the weights (`alignment` in bytes; `sections`: each weight array after the weights' section
    macro, for a profile of several RAM regions; `block`: the weights as one struct, `weights_block`). The compiler
    writes and compiles them early
    (tvm_ext.compile.early_objects)."""
    m = plan.model
    return {
        f"{m}_internal.h": write_internal_header(plan, kernel_signatures, requantize_roundings, helper_libraries,
                                                 signal_helpers, alignment, block=block),
        **{source: kernel_file_text(m, source, text) for source, text in kernel_files.items()},
        f"{m}_weights.c": write_weights(plan, constants, alignment, sections, block),
    }


def weights_block(config: BuildConfig, sections: bool) -> bool:
    """Whether a one-model bundle built with `config` stores its weights as one struct (packager.weights_block):
    when its profile's backend asks for it (BuildConfig.weights_block), but not with `sections` (several RAM
    regions: each array then carries the weights' section macro)."""
    return config.weights_block and not sections


def kernel_file_text(model: str, source: str, kernels_c: str) -> str:
    """The kernel source file `source` of `model`'s bundle: its kernels' C after the internal header."""
    return f"/* {source}: generated by TVM's C code generator through tvm_ext. */\n" \
           f'#include "{model}_internal.h"\n' + kernels_c


def kernel_files(model: str, bundle: BundleInputs) -> dict[str, str]:
    """Each kernel source's C: one per compute unit when the profile lists units, else `<model>_kernels.c`."""
    if not bundle.kernels_c_by_unit:
        return {f"{model}_kernels.c": bundle.kernels_c}
    return {unit_kernel_source(model, unit): text for unit, text in bundle.kernels_c_by_unit.items()}
