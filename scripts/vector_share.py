"""The Helium (MVE) share of a Cortex-M55 bundle's instructions, per kernel (a measurement, not a test).

    python scripts/vector_share.py BUNDLE_FOLDER... [--top N]

Each folder is a bundle compiled for `cortex-m55` (or another profile whose board is mps3-an547). Its self-test
is built from a copy of the folder (`make cortex-m-elf`; the folder itself is not written) and run once on QEMU
with every executed instruction traced (emulator/vector_share.py says how, and how a vector instruction is told
from a scalar one). Prints, per function of the bundle (its kernels, their static helpers, the run function),
the executed instructions per inference (the run's, divided by the self-test's inferences), the vector
instructions among them, their share, and the two-beat bound: instructions + vector instructions, what the
count becomes if every vector instruction takes two cycles and none overlaps (a Cortex-M55 spends two beats on
a 128-bit vector instruction and overlaps consecutive ones, so its cycles lie between the two figures, before
memory wait states and the scalar instructions' own costs). QEMU's -icount counts a vector instruction as one.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.boards import BOARDS  # noqa: E402
from emulator.vector_share import (  # noqa: E402
    FunctionShare, defined_functions, executed_addresses, function_shares, read_instructions)

BOARD = "mps3-an547"
"""The board whose core has Helium."""


def _measure(folder: Path) -> tuple[str, int, list[FunctionShare]]:
    """The bundle's prefix, the number of inferences its self-test ran, and its functions' shares over them."""
    manifest = json.loads((folder / "manifest.json").read_text())
    board = manifest.get("cortex_m", {}).get("board")
    if board != BOARD:
        raise SystemExit(f"{folder}: its self-test runs on {board or 'no emulated board'}, not {BOARD} "
                         "(compile it for cortex-m55)")
    prefix = manifest["model"]
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "bundle"
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("build-cortex-m"))
        subprocess.run(["make", "-s", "cortex-m-elf"], cwd=copy, check=True, stdout=subprocess.DEVNULL)
        elf = copy / "build-cortex-m" / "selftest.elf"
        instructions = read_instructions(elf)
        executed = executed_addresses(elf, BOARDS[BOARD])
        ours = defined_functions(sorted((copy / "build-cortex-m").glob(f"{prefix}_*.o")))
    entry = min(address for address, instruction in instructions.items() if instruction.function == f"{prefix}_run")
    shares = [share for share in function_shares(instructions, executed) if share.function in ours]
    return prefix, executed[entry], shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle folders compiled for cortex-m55")
    parser.add_argument("--top", type=int, default=8, help="functions listed per bundle (default 8)")
    args = parser.parse_args()
    print("Instructions per inference (QEMU, one per instruction: not cycles); vector = Helium (MVE) instructions.")
    print("| bundle | function | instructions | vector | share | two-beat bound |")
    print("|---|---|---:|---:|---:|---:|")
    for folder in args.bundles:
        prefix, runs, shares = _measure(folder)
        total = FunctionShare("all of the bundle's functions", sum(s.instructions for s in shares),
                              sum(s.vector for s in shares))
        for share in [*shares[:args.top], total]:
            print(f"| {prefix} | {share.function} | {share.instructions // runs:,} | {share.vector // runs:,} | "
                  f"{share.share:.0%} | {(share.instructions + share.vector) // runs:,} |")


if __name__ == "__main__":
    main()
