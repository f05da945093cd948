"""A compute unit's cost model from emulated bundles: instructions per MAC by operator kind, as TOML.

    python scripts/calibrate_units.py BUNDLE_FOLDER... 

Each folder is a bundle compiled for an emulated profile (its manifest's layer_report holds the QEMU
-icount instructions of every call, as report.md shows). Prints the `instructions_per_mac` table of a
`[[units]]` entry (target/README.md) over all the bundles' calls (target.compute_unit).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from target.compute_unit import instructions_per_mac_by_kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundles", nargs="+", type=Path, help="bundle folders (with manifest.json)")
    args = parser.parse_args()
    manifests = [json.loads((folder / "manifest.json").read_text()) for folder in args.bundles]
    profiles = sorted({manifest["profile"]["name"] for manifest in manifests})
    costs = instructions_per_mac_by_kind({"calls": [call for manifest in manifests
                                                    for call in manifest["layer_report"]["calls"]]})
    if not costs:
        raise SystemExit("no measured call with MACs in these bundles: compile them for an emulated profile")
    print(f"# calibrated on {', '.join(profiles)} from {len(manifests)} bundles (QEMU -icount, not cycles)")
    print("instructions_per_mac = { " + ", ".join(f'"{kind}" = {cost:.2f}' for kind, cost in costs.items()) + " }")


if __name__ == "__main__":
    main()
