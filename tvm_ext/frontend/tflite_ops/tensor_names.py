"""The names TVM's TFLite importer keys tensors by: one per tensor.

TFLite (and TFLite Micro) tell tensors apart by index and accept a file where two tensors share a name (or
have none); TVM's importer keeps each tensor's expression in a table keyed by name and never overwrites an
entry, so a second tensor of a name would be read as the first. Each tensor keeps its own name where no other
tensor has it; the others are named ``<name>#<index>`` (``tensor#<index>`` without a name), unique among all.
The names reach only the importer's table and the model's var names kept for messages (never the C)."""

from __future__ import annotations

from collections import Counter
from typing import Callable


def unique_tensor_names(names: list[str]) -> list[str]:
    """One name per tensor (``names`` are the tensors' names in index order), each different from the others:
    a name no other tensor has stays; a shared or empty one gets its tensor's index."""
    counts = Counter(names)
    taken = {name for name in names if name and counts[name] == 1}
    keys = []
    for index, name in enumerate(names):
        if name and counts[name] == 1:
            keys.append(name)
            continue
        key = f"{name or 'tensor'}#{index}"
        while key in taken:  # a tensor of the file already has this name
            key += f"#{index}"
        taken.add(key)
        keys.append(key)
    return keys


def tensor_name_table(subgraph, decode: Callable[[bytes | None], str]) -> list[str]:
    """``unique_tensor_names`` of a TFLite subgraph's tensors, their names decoded by ``decode``."""
    return unique_tensor_names([decode(subgraph.Tensors(index).Name()) for index in range(subgraph.TensorsLength())])
