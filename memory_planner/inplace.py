"""In-place hand-overs: merge each chain of buffers that take over their predecessor's bytes into one.

If B names A in `inplace_of` (and the hand-over is legal, see `liveness.shares_at_handover`), the two
can be one rectangle: A's first step to B's last step, as large as the larger of the two, at one offset.
Chains (A <- B <- C) merge whole. Each buffer gives its bytes to at most one successor: when several
name the same buffer, the first in list order takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_planner.api import Buffer
from memory_planner.liveness import shares_at_handover


@dataclass(frozen=True)
class MergedBuffers:
    """Rectangles for the strategies, and for each one (by name) the buffers it holds, in chain order."""

    blocks: list[Buffer]
    members: dict[str, list[str]]

    def expand(self, block_offsets: dict[str, int]) -> dict[str, int]:
        """Every buffer's offset (bytes): the offset of the block that holds it."""
        return {name: block_offsets[block] for block, names in self.members.items() for name in names}


def merge_inplace(buffers: Sequence[Buffer]) -> MergedBuffers:
    """Merge legal in-place chains; buffers without a hand-over stay as they are (minus `inplace_of`)."""
    by_name = {b.name: b for b in buffers}
    successor: dict[str, str] = {}
    for b in buffers:
        if shares_at_handover(b, by_name) and b.inplace_of not in successor:
            successor[b.inplace_of] = b.name  # type: ignore[index]
    taken = set(successor.values())
    blocks: list[Buffer] = []
    members: dict[str, list[str]] = {}
    for head in buffers:
        if head.name in taken:
            continue
        chain = [head]
        while chain[-1].name in successor:
            chain.append(by_name[successor[chain[-1].name]])
        blocks.append(
            Buffer(
                name=head.name,
                nbytes=max(b.nbytes for b in chain),
                first_step=head.first_step,
                last_step=chain[-1].last_step,
                alignment=max(b.alignment for b in chain),
                label=head.label,
            )
        )
        members[head.name] = [b.name for b in chain]
    return MergedBuffers(blocks, members)
