"""Benchmark the memory planner on every shared model against TFLite Micro's own arena (not a test).

    python scripts/bench_memory.py [--models ../shared/models] [--target lowpower]

For each .tflite model: compile it with `tvm_ext.compile` (which plans with `memory_planner`), read our
arena and lower bound from the bundle (and the bound the same order had before outputs could share bytes
with inputs through stream orders), and in the same run read TFLite Micro's arena for the same model
with the `tflite-micro` package (`print_allocations()`: head = planned tensors, tail = bookkeeping).
TFLM's head also holds the model's input and output tensors, which our bundle keeps in the caller's
buffers, so the "ours+I/O" columns add those bytes to ours (the issue's targets compare our arena with the
head), and "I/O in arena" plans the same buffers with the inputs and outputs in the arena
(`buffers_from_plan(..., io_in_arena=True)`; the bundle does not do that yet). Planning time is the
"planning" stage's time as the compiler logs it. A model that does not compile gets its one-line error
instead of numbers.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOCATION = re.compile(r"Arena allocation (head|tail) (\d+) bytes")
STAGE = re.compile(r"^planning\s+([\d.]+) s")


@dataclass(frozen=True)
class TflmArena:
    """TFLite Micro's arena for one model, in bytes."""

    head: int
    tail: int


def tflm_arena(model: Path) -> TflmArena:
    """Run TFLM's allocator on `model` and read what `print_allocations()` writes to the C stderr."""
    from tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(model))
    with tempfile.TemporaryFile(mode="w+b") as captured:
        saved = os.dup(2)
        sys.stderr.flush()
        os.dup2(captured.fileno(), 2)
        try:
            interpreter.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        found = dict((kind, int(n)) for kind, n in ALLOCATION.findall(captured.read().decode(errors="replace")))
    return TflmArena(found["head"], found["tail"])


def io_bytes(plan) -> int:
    """Bytes of the model's input and output tensors (in TFLM's arena, in the caller's buffers here)."""
    return sum(plan.tensors[name].nbytes for name in plan.inputs + plan.outputs)


def bound_without_streams(plan) -> int:
    """The liveness bound (bytes) for the same call order if no output shared bytes with an input through a
    stream order (the bound before stream orders; same-offset hand-overs still count once)."""
    from memory_planner.from_plan import buffers_from_plan
    from memory_planner.liveness import lower_bound

    buffers = buffers_from_plan(plan)
    return lower_bound([replace(b, inplace_of=None, stream=None) if b.stream is not None else b for b in buffers])


def ram_with_io_in_arena(plan, alignment: int) -> int:
    """Total RAM (bytes) if the model's inputs and outputs were planned into the arena with the rest (the
    planner's `io_in_arena`; the bundle itself still keeps them in the caller's buffers)."""
    from memory_planner import plan_memory
    from memory_planner.from_plan import buffers_from_plan

    return plan_memory(buffers_from_plan(plan, alignment=alignment, io_in_arena=True)).arena_bytes


def bench(model: Path, target: str, scratch: Path) -> str:
    """One table row for `model`."""
    from target.loading import load_profile
    from tvm_ext.compile import CompileError, compile

    log: list[str] = []
    try:
        bundle = compile(model, target, scratch / model.stem, force=True, log=log.append)
    except CompileError as err:
        return f"| {model.stem} | error: {err} |"
    memory = bundle.memory
    planning = next((float(m.group(1)) for line in log if (m := STAGE.match(line.strip()))), float("nan"))
    tflm = tflm_arena(model)
    ours_io = memory.arena_bytes + io_bytes(bundle.plan)
    ours_io_inside = ram_with_io_in_arena(bundle.plan, load_profile(target).alignment_bytes)
    return (
        f"| {model.stem} | {bound_without_streams(bundle.plan)} | {memory.lower_bound} | {memory.arena_bytes} "
        f"| {memory.strategy} | {memory.optimal} "
        f"| {tflm.head} | {tflm.head + tflm.tail} | {memory.arena_bytes / memory.lower_bound:.3f} "
        f"| {memory.arena_bytes / tflm.head:.3f} | {memory.arena_bytes / (tflm.head + tflm.tail):.3f} "
        f"| {ours_io} | {ours_io_inside} | {ours_io / tflm.head:.3f} | {ours_io_inside / tflm.head:.3f} "
        f"| {planning:.2f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_models = Path(os.environ.get("TVM_EXT_MODELS", ROOT.parent / "shared" / "models"))
    parser.add_argument("--models", type=Path, default=default_models)
    parser.add_argument("--target", default="lowpower")
    args = parser.parse_args()
    models = sorted(args.models.rglob("*.tflite"))
    print("| model | bound without streams | lower bound | our arena | strategy | optimal | TFLM head | TFLM head+tail "
          "| ours/bound | ours/TFLM head | ours/TFLM head+tail | ours+I/O | ours, I/O in arena | (ours+I/O)/TFLM head "
          "| (I/O in arena)/TFLM head | planning s |")
    print("|---" * 16 + "|")
    with tempfile.TemporaryDirectory() as scratch:
        for model in models:
            print(bench(model, args.target, Path(scratch)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
