"""The one signature of a timed step, shared by the compiler's stages and the quantizer's long steps."""

from __future__ import annotations

from typing import Callable, Protocol, TypeVar

T = TypeVar("T")


class Stage(Protocol):
    """Runs `work()`, logs the stage's line `<name> <seconds>  <describe(result)>` and returns the result;
    an exception from `work` passes through with no line logged."""

    def __call__(self, name: str, work: Callable[[], T], describe: Callable[[T], str]) -> T: ...


def untimed(name: str, work: Callable[[], T], describe: Callable[[T], str]) -> T:
    """A Stage that only runs `work()`: no time taken, nothing logged."""
    return work()
