"""Arena planning for an execution plan's buffers (pure Python, no TVM).

`plan_memory(buffers, strategy="auto")` returns a `MemoryPlan` with an offset for every buffer in ONE
arena. Modules: `liveness` (live ranges, lower bound), `strategies` (one module per placement strategy),
`check` (an independent checker), `picture` (SVG); `plan` holds the execution plan itself, the contract
a compiler writes and this package and `packager` read (plain data, no TVM), and `from_plan` (its buffers)
and `order` (a call order with a lower peak) read it.
"""

from __future__ import annotations

from memory_planner.api import Buffer, MemoryPlan
from memory_planner.planner import plan_memory

__all__ = ["Buffer", "MemoryPlan", "plan_memory"]
