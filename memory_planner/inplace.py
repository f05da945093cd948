"""Hand-overs: merge each chain of buffers that take over their predecessor's bytes into one block.

If B takes A's bytes (`liveness.handovers`: B names A in `inplace_of` and the hand-over is legal), the two
can be one rectangle from A's first step to B's last step: B at the block's start, A `distance` bytes above
it (rounded up to A's alignment: further apart is legal too), as large as their union. Chains (A <- B <- C)
merge whole: C at 0, B above C, A above B. Each buffer gives its bytes to at most one successor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_planner.api import Buffer
from memory_planner.liveness import handovers


@dataclass(frozen=True)
class MergedBuffers:
    """Rectangles for the strategies, and for each one (by name) the buffers it holds with their offsets
    (bytes) inside it, in chain order."""

    blocks: list[Buffer]
    members: dict[str, list[tuple[str, int]]]

    def expand(self, block_offsets: dict[str, int]) -> dict[str, int]:
        """Every buffer's offset (bytes): the offset of the block that holds it plus its place inside."""
        return {name: block_offsets[block] + inside
                for block, names in self.members.items() for name, inside in names}


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) & -alignment


def merge_inplace(buffers: Sequence[Buffer]) -> MergedBuffers:
    """Merge legal hand-over chains; buffers without a hand-over stay as they are (minus `inplace_of`)."""
    by_name = {b.name: b for b in buffers}
    shared = handovers(buffers)
    successor = {h.source.name: taker for taker, h in shared.items()}
    blocks: list[Buffer] = []
    members: dict[str, list[tuple[str, int]]] = {}
    for head in buffers:
        if head.name in shared:
            continue
        chain = [head]
        while chain[-1].name in successor:
            chain.append(by_name[successor[chain[-1].name]])
        inside = {chain[-1].name: 0}  # the last taker starts lowest; each source sits above its taker
        for taker, source in zip(reversed(chain), reversed(chain[:-1])):
            inside[source.name] = _align_up(inside[taker.name] + shared[taker.name].distance, source.alignment)
        blocks.append(
            Buffer(
                name=head.name,
                nbytes=max(inside[b.name] + b.nbytes for b in chain),
                first_step=head.first_step,
                last_step=chain[-1].last_step,
                alignment=max(b.alignment for b in chain),
                label=head.label,
            )
        )
        members[head.name] = [(b.name, inside[b.name]) for b in chain]
    return MergedBuffers(blocks, members)
