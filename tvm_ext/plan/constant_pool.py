"""The plan's constants, each stored once: a constant with the dtype, shape and bytes of an earlier one IS that
one (one `const` array in the bundle, which every call reading either of them is passed).

Copies arise in two ways. TFLite's converter gives every step of an unrolled RNN its own copy of the step's
weights (a 40-step GRU: 40 identical tensors), and our compile-time transforms make a new constant per call
even where the model shares one tensor (a weight re-laid out for its kernel, a bias with the input's zero point
folded in, a LOGISTIC table, a requantization's multipliers): each call's result is equal byte for byte to the
others' when their quantization is. Bytes decide, never values: 0.0 and -0.0, or NaNs of different payloads,
stay two constants.

Sharing is sound because no kernel writes a constant: the C signature gives every input parameter `const`
but the operands a kernel rewrites in place (`tvm_ext.layers.rewritten_operands`, `STATE_OPERAND_ATTR`), and
`extract_plan` makes those operands state buffers, never constants. Every weight array of a bundle gets the
same alignment (the profile's `alignment_bytes`, `packager.weights`), so the one copy meets the requirement of
every call that reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

READERS_NAMED = 3
"""A shared constant's label names this many of the layers reading it, then counts the rest."""


Content = tuple[str, tuple[int, ...], bytes]


def content_of(values: np.ndarray) -> Content:
    """What makes two constants one: dtype, shape and bytes."""
    return values.dtype.str, tuple(values.shape), values.tobytes()


@dataclass
class ConstantPool:
    """Constants by content. `arrays`: tensor name -> values, in the order first added, no two with the same
    dtype, shape and bytes."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    _name_of: dict[Content, str] = field(default_factory=dict)
    _readers: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, values: np.ndarray, readers: Sequence[str]) -> str:
        """The name of the constant holding `values`: an earlier constant with its dtype, shape and bytes, which
        `readers` (layer labels) then read too, else `name` (which must be new) holding a copy of `values`."""
        content = content_of(values)
        shared = self._name_of.get(content)
        if shared is not None:
            known = self._readers[shared]
            known.extend(reader for reader in readers if reader not in known)
            return shared
        if name in self.arrays:
            raise RuntimeError(f"constant {name} named twice, with different contents")
        self._name_of[content] = name
        self._readers[name] = list(dict.fromkeys(readers))
        self.arrays[name] = values
        return name

    def readers_label(self, name: str) -> str:
        """The layers reading constant `name`, as its comment names them: `a; b; c` or `a; b; c and 37 more`."""
        readers = self._readers[name]
        named = "; ".join(readers[:READERS_NAMED])
        rest = len(readers) - READERS_NAMED
        return f"{named} and {rest} more" if rest > 0 else named
