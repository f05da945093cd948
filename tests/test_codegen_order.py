"""The code generation workers take the subgraphs with the most kernels first (a long one started last leaves
the other workers idle), and the C still comes out in the subgraphs' order."""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import contextmanager

from memory_planner.plan import KernelSignature
from tvm_ext import subgraph_codegen
from tvm_ext.codegen_c import KernelSource
from tvm_ext.subgraph_codegen import SubgraphKernels, generate_kernels, largest_first


def subgraphs_of_sizes(*sizes: int) -> list[SubgraphKernels]:
    """Subgraphs 0, 1, ... with `sizes[i]` kernels each (placeholders: the test's pool never generates them)."""
    return [SubgraphKernels(index, {f"s{index}k{k}": None for k in range(size)}) for index, size in enumerate(sizes)]


def test_largest_first_orders_by_kernel_count_keeping_ties_in_order():
    assert largest_first(subgraphs_of_sizes(2, 1, 5, 3, 3)) == [2, 3, 4, 0, 1]


def test_the_pool_receives_the_largest_subgraph_first_and_the_c_keeps_the_subgraph_order(monkeypatch):
    submitted: list[int] = []

    class RecordingPool:
        def submit(self, function, index: int) -> Future:
            submitted.append(index)
            future: Future = Future()
            name = f"k{index}"
            future.set_result(KernelSource({name: f"void {name}(void) {{}}\n"},
                                           {name: KernelSignature(name, 1, 1, (), ())}, ()))
            return future

    @contextmanager
    def recording_workers(count, subgraphs, target, prefix):
        yield RecordingPool()

    monkeypatch.setattr(subgraph_codegen, "_workers", recording_workers)
    source = generate_kernels(subgraphs_of_sizes(1, 4, 2), target=None, prefix="m", jobs=2)
    assert submitted == [1, 2, 0]
    assert list(source.definitions) == ["k0", "k1", "k2"]
