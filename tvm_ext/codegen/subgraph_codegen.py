"""The kernels' C generated per subgraph (PartitionSubgraphs), in a pool of worker processes, combined into one.

`generate_subgraph(subgraph, target, prefix)` is a pure function: `codegen_c.generate_c` on the kernels the
subgraph's calls are the first to use. Each distinct kernel (unique_kernels merged structurally equal
PrimFuncs under one C name) belongs to exactly one subgraph, so it is generated once per model. The results
are combined in subgraph order, whatever the number of workers: `jobs=1` and `jobs=N` give the same C.

The workers are forked ('fork' start method), and they must be: TVM 0.27 cannot serialize TIR (pickling a
PrimFunc, `tvm.ir.save_json` and `tvm_ffi`'s JSON graph of even `tirx.const(1)` end in a segmentation
fault), and TVMScript does not parse our requantization intrinsic back, so a 'spawn' or 'forkserver' worker
cannot receive a kernel; a forked one inherits them. Forking is safe here: at that point the compiler's
process runs no TVM thread (the passes and the C code generator are single-threaded; numpy's OpenBLAS pool
registers its own fork handlers), and a worker only runs TIR passes and the C code generator. A pool of two
is ready in 0.07 s forked, where with TVM and our code generator imported in each worker it takes 5.4 s
under 'forkserver' and 6.4 s under 'spawn' (this 2-core machine at load 9; 3.0-3.5 s for one import),
more than vww_96_int8's whole code generation (1-2 s).

The pool is tvm_ext.processes.forked_workers (no thread in the compiler's process; an interrupt ends the workers and
cannot hang on them). A worker that dies (a crash, a kill) ends the compile with an internal error.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm import relax, tirx

from tvm_ext.codegen.codegen_c import KernelSource, generate_c
from tvm_ext.processes.forked_workers import WorkerEndedError, run_in_forked_workers
from tvm_ext.transform.partition_subgraphs import binding_subgraphs

_CALL_TIR = tvm.ir.Op.get("relax.call_tir")


@dataclass(frozen=True)
class SubgraphKernels:
    """The kernels whose first call lies in subgraph `subgraph`: C name -> PrimFunc, in first-call order."""

    subgraph: int
    kernels: dict[str, tirx.PrimFunc]


def subgraph_kernels(mod: tvm.IRModule, kernels: dict[str, tirx.PrimFunc],
                     c_name_of: dict[str, str]) -> list[SubgraphKernels]:
    """`kernels` (as unique_kernels returns them, with `c_name_of`) grouped by the subgraph of main's binding
    that calls each first; subgraphs that call no new kernel are left out."""
    main = mod["main"]
    bindings = [b for block in main.body.blocks for b in block.bindings]
    grouped: dict[int, dict[str, tirx.PrimFunc]] = {}
    placed: set[str] = set()
    for binding, subgraph in zip(bindings, binding_subgraphs(main)):
        value = binding.value
        if not (isinstance(value, relax.Call) and value.op.same_as(_CALL_TIR)):
            continue
        name = c_name_of[value.args[0].name_hint]
        if name not in placed:
            placed.add(name)
            grouped.setdefault(subgraph, {})[name] = kernels[name]
    return [SubgraphKernels(subgraph, grouped[subgraph]) for subgraph in sorted(grouped)]


def generate_subgraph(subgraph: SubgraphKernels, target: tvm.target.Target, prefix: str) -> KernelSource:
    """The C of one subgraph's kernels: a pure function of its arguments (see codegen_c.generate_c)."""
    return generate_c(subgraph.kernels, target, prefix)


def combine(sources: list[KernelSource]) -> KernelSource:
    """One KernelSource from the subgraphs' sources, in their order: every definition and signature, every
    helper any of them calls."""
    roundings = tuple(sorted({r for source in sources for r in source.requantize_roundings}))
    signal_helpers = tuple(sorted({h for source in sources for h in source.signal_helpers}))
    libraries = tuple(sorted({library for source in sources for library in source.helper_libraries},
                             key=lambda library: library.name))
    return KernelSource({name: text for source in sources for name, text in source.definitions.items()},
                        {name: sig for source in sources for name, sig in source.signatures.items()},
                        roundings, libraries, signal_helpers)


class SubgraphSources:
    """The C of the subgraphs generated so far in one compile, each kept under its kernels (their C names and
    PrimFunc objects, which the key holds), its target and its prefix: `generate_subgraph` is a pure function of
    them, so a subgraph generated again with the same kernels takes the kept C. The planning's second code
    generation (`tvm_ext.compile.pipeline.planning_reversed`: a few kernels marked to run backwards, every other
    kernel the same object) then generates only the subgraphs of the changed kernels (vww_96_int8 on rv32imc:
    one of its 14)."""

    def __init__(self) -> None:
        self._sources: dict[tuple, KernelSource] = {}

    @staticmethod
    def key(subgraph: SubgraphKernels, target: tvm.target.Target, prefix: str) -> tuple:
        return (target, prefix, tuple(subgraph.kernels.items()))

    def get(self, subgraph: SubgraphKernels, target: tvm.target.Target, prefix: str) -> KernelSource | None:
        return self._sources.get(self.key(subgraph, target, prefix))

    def put(self, subgraph: SubgraphKernels, target: tvm.target.Target, prefix: str, source: KernelSource) -> None:
        self._sources[self.key(subgraph, target, prefix)] = source


def generate_kernels(subgraphs: list[SubgraphKernels], target: tvm.target.Target, prefix: str,
                     jobs: int, kept: SubgraphSources | None = None) -> KernelSource:
    """The C of every subgraph's kernels, generated by `jobs` worker processes (in this process for 1); those
    `kept` holds taken from it, the others added to it."""
    kept = kept if kept is not None else SubgraphSources()
    sources = {index: source for index, subgraph in enumerate(subgraphs)
               if (source := kept.get(subgraph, target, prefix)) is not None}
    missing = [index for index in range(len(subgraphs)) if index not in sources]
    if jobs <= 1 or len(missing) <= 1:
        sources |= {index: generate_subgraph(subgraphs[index], target, prefix) for index in missing}
    else:
        try:
            sources |= run_in_forked_workers(lambda index: generate_subgraph(subgraphs[index], target, prefix),
                                             [missing[i] for i in largest_first([subgraphs[m] for m in missing])],
                                             jobs)
        except WorkerEndedError as err:
            raise RuntimeError("a code generation worker process ended abruptly (crashed or was killed)") from err
    for index in missing:
        kept.put(subgraphs[index], target, prefix, sources[index])
    return combine([sources[index] for index in range(len(subgraphs))])


def largest_first(subgraphs: list[SubgraphKernels]) -> list[int]:
    """The subgraphs' indices, most kernels first (ties in their order): the order the workers take them in,
    so that a long subgraph does not start last and leave the other workers idle while it runs (vww_96_int8's
    five-kernel subgraph takes 0.56 s of its 1.9 s of code generation; in subgraph order it came fifth)."""
    return sorted(range(len(subgraphs)), key=lambda index: -len(subgraphs[index].kernels))
