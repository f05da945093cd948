"""The code generation workers take the subgraphs with the most kernels first (a long one started last leaves
the other workers idle), and the C still comes out in the subgraphs' order."""

from __future__ import annotations

from memory_planner.plan import KernelSignature
from tvm_ext.codegen import subgraph_codegen
from tvm_ext.codegen.codegen_c import KernelSource
from tvm_ext.codegen.subgraph_codegen import SubgraphKernels, generate_kernels, largest_first


def subgraphs_of_sizes(*sizes: int) -> list[SubgraphKernels]:
    """Subgraphs 0, 1, ... with `sizes[i]` kernels each (placeholders: the test's pool never generates them)."""
    return [SubgraphKernels(index, {f"s{index}k{k}": None for k in range(size)}) for index, size in enumerate(sizes)]


def test_largest_first_orders_by_kernel_count_keeping_ties_in_order():
    assert largest_first(subgraphs_of_sizes(2, 1, 5, 3, 3)) == [2, 3, 4, 0, 1]


def test_the_pool_receives_the_largest_subgraph_first_and_the_c_keeps_the_subgraph_order(monkeypatch):
    handed_out: list[int] = []

    def recording_pool(function, order, count):
        handed_out.extend(order)
        return {index: source_of(f"k{index}") for index in order}

    monkeypatch.setattr(subgraph_codegen, "run_in_forked_workers", recording_pool)
    source = generate_kernels(subgraphs_of_sizes(1, 4, 2), target=None, prefix="m", jobs=2)
    assert handed_out == [1, 2, 0]
    assert list(source.definitions) == ["k0", "k1", "k2"]


def source_of(name: str) -> KernelSource:
    """The C source of one empty kernel `name`."""
    return KernelSource({name: f"void {name}(void) {{}}\n"}, {name: KernelSignature(name, 1, 1, (), ())}, ())
