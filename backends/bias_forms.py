"""A requantizing helper's two forms by the type of the biases it takes: its name as it is for int32 biases, with
`_b16` for int16 ones (a layer whose folded biases fit 16 bits stores them so: half the bytes). One rule for the
C helpers' names and the TIR ops' names of every backend (no TVM)."""

from __future__ import annotations

BIAS_TYPES = ("int32", "int16")
"""The bias types a requantizing helper takes."""


def bias_form(name: str, bias: str) -> str:
    """`name` for biases of type `bias` "int32", `name` + "_b16" for "int16"."""
    if bias not in BIAS_TYPES:
        raise ValueError(f"bias type {bias!r} is none of {BIAS_TYPES}")
    return name if bias == "int32" else f"{name}_b16"


def by_bias(name: str) -> dict[str, str]:
    """`name`'s form for each bias type: {"int32": name, "int16": name + "_b16"}."""
    return {bias: bias_form(name, bias) for bias in BIAS_TYPES}
