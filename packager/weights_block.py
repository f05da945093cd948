"""The weights as ONE const struct, `<model>_weights`, addressed by the run function from one base pointer.

Why: a 32-bit RISC-V compiler builds the address of each separate `const` array from its symbol
(`auipc`+`addi` under -mcmodel=medany, `lui`+`addi` under medlow: 8 B for every pointer argument of every call),
where Arm's literal pool shares one 4 B entry among the calls. With the weights as members of one struct, the
run function holds the struct's address in one register (`<M>_WEIGHTS_BASE`, below) and each weight's address
is that register plus the member's offset: one `addi` (4 B) within 2 KiB of an address the compiler already
holds, a shared upper part beyond (kws_gru_40x16_int8 on rv32imc, 602 weight pointers in 121 calls: run
function 6,758 -> 4,846 B before the linker's relaxation of the calls).

Layout: the members in `ExecutionPlan.constants()` order, each starting at a multiple of MEMBER_ALIGNMENT_BYTES
from the struct's start, or of its element's bytes where larger (int64: 8), by explicit `uint8_t` padding members,
so that the layout needs no member attribute of any compiler and the compiler adds no padding of its own; the
struct object itself `<M>_ALIGNED(alignment)`, the bundle's alignment. Each member has its tensor's name
(`l3_weights`), a valid C identifier (the plan's contract). Here: the layout, the internal header's declaration
and the run function's pointers; `packager.weights` writes the object's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_planner.plan import DTYPE_BYTES, ExecutionPlan, Tensor
from packager.c_types import c_type_of


MEMBER_ALIGNMENT_BYTES = 4
"""The alignment of each member, bytes: a word, what RV32's kernels and helpers need of a weight (word loads; no
helper assumes more than `__builtin_assume_aligned(w, 4)`: `memory_planner.api.VIEW_ALIGNMENT_BYTES`'
note), where separate arrays each took the profile's `alignment_bytes` (16 on rv32imc: kws_gru_40x16_int8's 350
arrays had 891 B of padding at 16). A backend whose kernels need more of a weight asks for no block
(`backends.backend.Backend.weights_block`)."""


@dataclass(frozen=True)
class BlockMember:
    """One weight member of the struct (`tensor`) and the padding bytes after it (0: none)."""

    tensor: Tensor
    padding_after: int


def block_members(plan: ExecutionPlan) -> list[BlockMember]:
    """The struct's weight members in order, each padded to start at a multiple of MEMBER_ALIGNMENT_BYTES, or of
    its element's bytes where larger (an int64 member at a multiple of 8), the last to a multiple of the struct's
    alignment (its largest element's bytes): every byte of padding is a member the bundle counts, none the
    compiler's, so the struct's bytes are its members' and their padding's."""
    constants = plan.constants()
    struct_alignment = max((_element_bytes(tensor) for tensor in constants), default=1)
    members, offset = [], 0
    for tensor, following in zip(constants, [*constants[1:], None]):
        offset += tensor.nbytes
        alignment = struct_alignment if following is None else max(MEMBER_ALIGNMENT_BYTES, _element_bytes(following))
        members.append(BlockMember(tensor, -offset % alignment))
        offset += members[-1].padding_after
    return members


def _element_bytes(tensor: Tensor) -> int:
    """The bytes of one element of ``tensor``: its C type's alignment on the 32-bit cores that take the block."""
    return DTYPE_BYTES[tensor.dtype]


def struct_tag(model: str) -> str:
    """The struct's tag: `struct <model>_weights_block`."""
    return f"{model}_weights_block"


def object_symbol(model: str) -> str:
    """The one const object holding every weight."""
    return f"{model}_weights"


def block_declaration(plan: ExecutionPlan, alignment: int) -> list[str]:
    """The internal header's lines: the struct type and the extern declaration of its one object; no lines for
    a model without weights (nothing to address)."""
    m = plan.model
    members = block_members(plan)
    if not members:
        return []
    lines = [f"/* Weights (const: they stay in flash): one struct, {alignment}-byte aligned, each member "
             f"{MEMBER_ALIGNMENT_BYTES}-byte (packager.weights_block). */",
             f"struct {struct_tag(m)} {{"]
    for index, member in enumerate(members):
        tensor = member.tensor
        lines.append(f"  {c_type_of(tensor.dtype)} {tensor.name}[{tensor.elements}];")
        if member.padding_after:
            lines.append(f"  uint8_t padding{index}[{member.padding_after}];")
    return [*lines, "};", f"extern const struct {struct_tag(m)} {object_symbol(m)};"]


def base_lines(plan: ExecutionPlan) -> list[str]:
    """The run function's lines that set its base pointer `weights` to the one object: an empty asm statement
    (GCC, Clang) hides the value from the compiler, so that it adds each member's offset to the one register
    instead of rebuilding each member's address from the symbol. No lines for a model without weights."""
    if not plan.constants():
        return []
    m = plan.model
    return [f"  const struct {struct_tag(m)}* weights = &{object_symbol(m)};",
            "#if defined(__GNUC__) || defined(__clang__)",
            '  __asm__("" : "+r"(weights)); /* one base register for every weight (packager.weights_block) */',
            "#endif"]


def member_pointer(tensor_name: str) -> str:
    """The run function's expression for the address of weight `tensor_name` (its member's first element)."""
    return f"weights->{tensor_name}"
