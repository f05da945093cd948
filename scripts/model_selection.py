"""The benchmarks' `--only` option (scripts/bench_speed.py, scripts/bench_memory.py): which model files of the
models folder a run takes, named by file stem, the same way in every script.

    --only kws_ref_model vww_96_int8        # names apart
    --only kws_ref_model,vww_96_int8        # or joined by commas (either, or both mixed)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def add_only_option(parser: argparse.ArgumentParser) -> None:
    """`--only NAME [NAME ...]`: model file stems, each value one stem or several joined by commas."""
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME",
                        help="model file stems to run, apart or comma-separated (default: every .tflite model)")


def only_names(only: Sequence[str]) -> set[str]:
    """The stems `--only`'s values name (each value split at its commas, empty pieces left out)."""
    return {name for value in only for name in value.split(",") if name}


def selected_models(folder: Path, only: Sequence[str]) -> list[Path]:
    """The .tflite files under `folder` (sorted) whose stem `only` names (`only_names`), or every one when `only` is
    empty (no `--only`). ValueError, its message one line, when `only` names a stem no file under `folder` has, or
    is given but names none (`--only ,`, `--only ""`: not every model)."""
    names = only_names(only)
    if only and not names:
        raise ValueError(f"--only: {' '.join(repr(value) for value in only)} names no model")
    models = [m for m in sorted(folder.rglob("*.tflite")) if not names or m.stem in names]
    missing = names - {m.stem for m in models}
    if missing:
        raise ValueError(f"--only: no model {', '.join(sorted(missing))} under {folder}")
    return models
