"""A bundle for a profile of two RAM regions (packager/region_arenas.py) on the host: one static arena array
per region, its bytes, index and section macro in the header, the weights' section macro, the regions in
manifest.json, report.md, README.md, memory_plan.svg and report.html (every region's arena drawn, each buffer
once); the self-test passes with every byte of both arenas that no live buffer holds poisoned before each call,
under the strict warnings and the sanitizers, with the section macros defined, and with no static arena at all
(`<MODEL>_NO_STATIC_ARENA`): the caller's arena for every region through `<model>_run_with_arenas`, whose
checks of each region's pointer, alignment and bytes are tested one by one."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import tvm_ext
from c_checks import strict_sanitized_selftest
from conftest import example_model, two_region_profile

FAST_BYTES = 8_192
PROFILE = two_region_profile("lowpower", "lowpower-two-regions", ("fast", FAST_BYTES), ("slow", 524_288 - FAST_BYTES))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("regions")
    (folder / "two.toml").write_text(PROFILE)
    (folder / "model").mkdir()
    return tvm_ext.compile(example_model(folder / "model"), str(folder / "two.toml"), folder / "out")


def test_each_region_has_its_arena_its_macros_and_its_manifest_entry(bundle) -> None:
    m, M = bundle.plan.model, bundle.plan.model.upper()
    out = bundle.out_dir
    regions = json.loads((out / "manifest.json").read_text())["memory_regions"]
    assert [(r["region"], r["capacity_bytes"], r["symbol"]) for r in regions] == [
        ("fast", FAST_BYTES, f"{m}_arena_fast"), ("slow", None, f"{m}_arena")]
    fast, slow = regions
    assert 0 < fast["arena_bytes"] <= FAST_BYTES and slow["arena_bytes"] == bundle.memory.arena_bytes > 0
    assert bundle.ram.arena_bytes == fast["arena_bytes"] + slow["arena_bytes"]
    # The fast region holds the buffers of the highest traffic per byte among those it could.
    assert min(b["traffic_per_byte"] for b in fast["buffers"]) >= min(b["traffic_per_byte"] for b in slow["buffers"])
    header = (out / f"{m}.h").read_text()
    for region in regions:
        assert f"#define {M}_ARENA_{region['region'].upper()}_BYTES {region['arena_bytes']}u" in header
        assert f"#ifndef {region['section_macro']}\n#define {region['section_macro']}\n#endif" in header
    model_c = (out / f"{m}_model.c").read_text()
    assert f"{M}_ARENA_FAST_SECTION {M}_ALIGNED(16) static uint8_t {m}_arena_fast[{fast['arena_bytes']}];" in model_c
    assert f"{M}_ARENA_SLOW_SECTION {M}_ALIGNED(16) static uint8_t {m}_arena[" in model_c
    assert f"poison(arenas[0], " in model_c and f"poison(arenas[1], " in model_c
    for index, region in enumerate(regions):
        assert f"#define {M}_ARENA_{region['region'].upper()}_INDEX {index}u" in header
    assert f"#define {M}_REGION_COUNT 2u" in header
    weights_c = (out / f"{m}_weights.c").read_text()
    assert weights_c.count(f"{M}_WEIGHTS_SECTION {M}_ALIGNED(16) const") == len(bundle.plan.constants())
    assert "## RAM regions" in (out / "report.md").read_text()
    readme = (out / "README.md").read_text()
    assert f"| arena of the faster RAM region fast (`{m}_arena_fast`) | {fast['arena_bytes']:,} |" in readme
    assert f"| arena (activations and scratch, RAM, last RAM region slow (`{m}_arena`)) | " \
           f"{slow['arena_bytes']:,} |" in readme
    assert f"`{m}_run_with_arenas`" in readme and f"int {m}_run_with_arenas(" in readme


def test_every_regions_arena_is_drawn_and_every_arena_tensor_names_its_region(bundle) -> None:
    """memory_plan.svg and report.html draw one lane per region, each lane its region's buffers (each buffer
    once in the whole drawing, at the offset the manifest gives in its region's arena); the manifest's tensors
    name their region."""
    out = bundle.out_dir
    manifest = json.loads((out / "manifest.json").read_text())
    regions = manifest["memory_regions"]
    offset_of = {t["name"]: (t.get("region"), t.get("offset")) for t in manifest["tensors"]}
    for drawing in ((out / "memory_plan.svg").read_text(), (out / "report.html").read_text()):
        lanes = re.findall(r'<svg y="\d+" [^>]*class="region" aria-label="region (\w+)">(.*?)\n</svg>', drawing, re.S)
        assert [name for name, _ in lanes] == [r["region"] for r in regions]
        for (name, lane), region in zip(lanes, regions):
            assert f"region {name} (" in lane and f"arena {region['arena_bytes']:,} B" in lane
            drawn = re.findall(r"<title>(\S+): [\d,]+ B at offset ([\d,]+),", lane)
            assert sorted(n for n, _ in drawn) == sorted(b["name"] for b in region["buffers"])
            for buffer, offset in drawn:
                assert offset_of[buffer] == (name, int(offset.replace(",", ""))), buffer
    assert manifest["arena"]["region"] == "slow"
    assert "memory_plan.svg and report.html draw each region's arena" in (out / "report.md").read_text()


def test_the_selftest_passes_on_poisoned_arenas_placed_in_sections(bundle, tmp_path: Path) -> None:
    M = bundle.plan.model.upper()
    sections = " ".join(f"'-D{M}_{name}_SECTION=__attribute__((section(\"{section}\")))'" for name, section in
                        (("ARENA_FAST", ".bss.fast_arena"), ("ARENA_SLOW", ".bss.slow_arena"),
                         ("WEIGHTS", ".rodata.model_weights")))
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{M}_POISON_ARENA {sections}")
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr


def own_arenas_driver(header: str, selftest_c: str, m: str, regions: list[str]) -> str:
    """The bundle's selftest.c run on the caller's arenas: its `<m>_run` is a driver's function that passes an
    array of its own per region (`regions`: names, fastest first) to `<m>_run_with_arenas`, after checking that
    a NULL, a misaligned or (for a region of some bytes) a one-byte-short arena of each region is refused with
    its status (exit status 100, 101 or 102 of the run otherwise)."""
    M = m.upper()
    params = re.search(rf"^int {m}_run\((.*)\);$", header, re.M).group(1)
    args = ", ".join(p.split()[-1].lstrip("*") for p in params.split(", "))
    arrays = [f"own_{r}" for r in regions]
    lines = [
        "#include <stddef.h>", "#include <stdint.h>", f'#include "{m}.h"',
        *(f"static uint8_t own_{r}[{M}_ARENA_{r.upper()}_BYTES + 16u] __attribute__((aligned(64)));" for r in regions),
        f"static int own_run({params})", "{",
        f"  uint8_t* arenas[{M}_REGION_COUNT] = {{{', '.join(arrays)}}};",
        f"  size_t sizes[{M}_REGION_COUNT] = {{{', '.join(f'{M}_ARENA_{r.upper()}_BYTES' for r in regions)}}};",
        "  size_t k;",
        f"  for (k = 0u; k < {M}_REGION_COUNT; ++k) {{",
        "    uint8_t* const mine = arenas[k];",
        "    arenas[k] = NULL;",
        f"    if ({m}_run_with_arenas(arenas, sizes, {args}) != {M}_ERROR_NULL_ARGUMENT) {{ return 100; }}",
        "    arenas[k] = mine + 1;",
        f"    if ({m}_run_with_arenas(arenas, sizes, {args}) != {M}_ERROR_MISALIGNED_ARENA) {{ return 101; }}",
        "    arenas[k] = mine;",
        "    if (sizes[k] > 0u) {",
        "      sizes[k] -= 1u;",
        f"      if ({m}_run_with_arenas(arenas, sizes, {args}) != {M}_ERROR_ARENA_TOO_SMALL) {{ return 102; }}",
        "      sizes[k] += 1u;",
        "    }",
        "  }",
        f"  return {m}_run_with_arenas(arenas, sizes, {args});",
        "}",
        f"#define {m}_run own_run",
    ]
    return "\n".join(lines) + "\n" + selftest_c


def test_without_static_arenas_the_caller_passes_every_regions_arena(bundle, tmp_path: Path) -> None:
    """`<MODEL>_NO_STATIC_ARENA` leaves out every region's static arena and the run functions that use them;
    the self-test then passes on the caller's own arenas, one per region, poisoned, through
    `<model>_run_with_arenas`, which refuses a NULL, misaligned or short arena of any region."""
    m, M = bundle.plan.model, bundle.plan.model.upper()
    out = bundle.out_dir
    regions = [r["region"] for r in json.loads((out / "manifest.json").read_text())["memory_regions"]]
    driver = own_arenas_driver((out / f"{m}.h").read_text(), (out / "selftest.c").read_text(), m, regions)
    proc = strict_sanitized_selftest(out, tmp_path / "own", f"-D{M}_NO_STATIC_ARENA -D{M}_POISON_ARENA",
                                     selftest_source=driver)
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr
    symbols = subprocess.run(["nm", f"lib{m}.a"], cwd=tmp_path / "own" / out.name, capture_output=True,
                             text=True, check=True).stdout
    assert f" T {m}_run_with_arenas\n" in symbols
    assert f"{m}_arena" not in symbols.replace(f"{m}_run_with_arenas", "")
    assert f" {m}_run\n" not in symbols and f" {m}_run_with_arena\n" not in symbols
