"""The code generation workers take the subgraphs with the most kernels first (a long one started last leaves
the other workers idle), and the C still comes out in the subgraphs' order. A code generation again within one
compile (`SubgraphSources`) generates only the subgraphs whose kernels changed."""

from __future__ import annotations

from memory_planner.plan import KernelSignature
from tvm_ext.codegen import subgraph_codegen
from tvm_ext.codegen.codegen_c import KernelSource
from tvm_ext.codegen.subgraph_codegen import SubgraphKernels, SubgraphSources, generate_kernels, largest_first


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


def test_a_second_generation_takes_the_kept_c_of_the_subgraphs_whose_kernels_are_the_same_objects(monkeypatch):
    generated: list[int] = []

    def recording_generator(subgraph, target, prefix):
        generated.append(subgraph.subgraph)
        return source_of(f"{next(iter(subgraph.kernels))}_{len(generated)}")

    monkeypatch.setattr(subgraph_codegen, "generate_subgraph", recording_generator)
    kept = SubgraphSources()
    first = [SubgraphKernels(index, {f"k{index}": object()}) for index in range(3)]
    before = generate_kernels(first, target=None, prefix="m", jobs=1, kept=kept)
    marked = [first[0], SubgraphKernels(1, {"k1": object()}), first[2]]  # k1 generated again (run backwards)
    after = generate_kernels(marked, target=None, prefix="m", jobs=2, kept=kept)
    assert generated == [0, 1, 2, 1]
    assert list(before.definitions) == ["k0_1", "k1_2", "k2_3"]
    assert list(after.definitions) == ["k0_1", "k1_4", "k2_3"]


def source_of(name: str) -> KernelSource:
    """The C source of one empty kernel `name`."""
    return KernelSource({name: f"void {name}(void) {{}}\n"}, {name: KernelSignature(name, 1, 1, (), ())}, ())
