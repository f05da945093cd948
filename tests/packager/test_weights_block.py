"""The weights struct's layout (packager.weights_block): every byte of padding in it is an explicit member the
bundle counts, none the compiler's, checked by RV32's own compiler (the block's cores) on the declaration."""

from __future__ import annotations

import subprocess
from pathlib import Path

from memory_planner.plan import ExecutionPlan, Tensor, TensorRole
from packager.weights_block import block_declaration, block_members


def _plan(dtypes_and_elements: list[tuple[str, int]]) -> ExecutionPlan:
    tensors = {f"w{index}": Tensor(f"w{index}", (elements,), dtype, TensorRole.CONSTANT)
               for index, (dtype, elements) in enumerate(dtypes_and_elements)}
    return ExecutionPlan("m", "m.tflite", "rv32imc", tensors, [], [], [])


def test_an_int64_member_starts_at_a_multiple_of_eight_by_explicit_padding(tmp_path: Path) -> None:
    # int8[3] then a 16x8 bias (int64[2]): a word's padding alone (1 B) left the int64 member at offset 4, where
    # the compiler added 4 B of its own that no count saw; and the struct ends at a multiple of its alignment (8).
    plan = _plan([("int8", 3), ("int64", 2), ("int8", 5), ("int32", 1), ("int8", 2)])
    members = block_members(plan)
    assert [member.padding_after for member in members] == [5, 0, 3, 0, 2]
    struct_bytes = sum(member.tensor.nbytes + member.padding_after for member in members)
    source = tmp_path / "block.c"
    source.write_text("#include <stdint.h>\n" + "\n".join(block_declaration(plan, 16)) + "\n"
                      f"_Static_assert(sizeof(struct m_weights_block) == {struct_bytes}, \"padding not counted\");\n")
    subprocess.run(["riscv64-unknown-elf-gcc", "-march=rv32imc", "-mabi=ilp32", "-std=c11", "-ffreestanding", "-fsyntax-only",
                    str(source)], check=True, capture_output=True, text=True)
