"""Hand-overs: merge each chain of same-offset hand-overs into one block; keep stream hand-overs as pairs.

If B takes A's bytes at one offset (`liveness.handovers`, B without a stream order), the two can be one
rectangle from A's first step to B's last step, as large as A (B is not larger), at one offset. Chains
(A <- B <- C) merge whole. A hand-over with a stream order stays two blocks: the taker's block names the
source's block in `inplace_of` and keeps the order, and the strategies treat the pair as a soft conflict
(`strategies.placement.time_conflicts`), so each taker finds its own distance below its source instead of
a chain stacking every distance on top of the last. Each buffer gives its bytes to at most one successor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_planner.api import Buffer
from memory_planner.liveness import handovers


@dataclass(frozen=True)
class MergedBuffers:
    """Blocks for the strategies, and for each one (by name) the buffers it holds at its offset, in chain order."""

    blocks: list[Buffer]
    members: dict[str, list[str]]

    def expand(self, block_offsets: dict[str, int]) -> dict[str, int]:
        """Every buffer's offset (bytes): the offset of the block that holds it."""
        return {name: block_offsets[block] for block, names in self.members.items() for name in names}


def merge_inplace(buffers: Sequence[Buffer]) -> MergedBuffers:
    """Merge same-offset hand-over chains; keep stream hand-overs between the blocks (module docstring);
    buffers without a hand-over stay as they are (minus `inplace_of`)."""
    by_name = {b.name: b for b in buffers}
    shared = handovers(buffers)
    same_offset = {taker for taker, h in shared.items() if h.taker.stream is None}
    successor = {shared[taker].source.name: taker for taker in same_offset}
    chains: list[list[Buffer]] = []
    block_of: dict[str, str] = {}
    for head in buffers:
        if head.name in same_offset:
            continue
        chains.append([head])
        while chains[-1][-1].name in successor:
            chains[-1].append(by_name[successor[chains[-1][-1].name]])
        block_of.update((b.name, head.name) for b in chains[-1])
    blocks: list[Buffer] = []
    for chain in chains:
        head = chain[0]
        streamed = shared.get(head.name)
        blocks.append(
            Buffer(
                name=head.name,
                nbytes=max(b.nbytes for b in chain),
                first_step=head.first_step,
                last_step=chain[-1].last_step,
                alignment=max(b.alignment for b in chain),
                label=head.label,
                inplace_of=None if streamed is None else block_of[streamed.source.name],
                stream=None if streamed is None else head.stream,
                filled_before=head.filled_before,
            )
        )
    return MergedBuffers(blocks, {chain[0].name: [b.name for b in chain] for chain in chains})
