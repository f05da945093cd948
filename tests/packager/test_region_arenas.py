"""A bundle for a profile of two RAM regions (packager/region_arenas.py) on the host: one static arena array
per region, its bytes and section macro in the header, the weights' section macro, the regions in manifest.json
and report.md; the self-test passes with every byte of both arenas that no live buffer holds poisoned before
each call, under the strict warnings and the sanitizers, and with the section macros defined."""

from __future__ import annotations

import json
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
    assert f"poison({m}_arena_fast, " in model_c
    weights_c = (out / f"{m}_weights.c").read_text()
    assert weights_c.count(f"{M}_WEIGHTS_SECTION {M}_ALIGNED(16) const") == len(bundle.plan.constants())
    assert "## RAM regions" in (out / "report.md").read_text()
    readme = (out / "README.md").read_text()
    assert f"| arena of the faster RAM region fast (`{m}_arena_fast`) | {fast['arena_bytes']:,} |" in readme


def test_the_selftest_passes_on_poisoned_arenas_placed_in_sections(bundle, tmp_path: Path) -> None:
    M = bundle.plan.model.upper()
    sections = " ".join(f"'-D{M}_{name}_SECTION=__attribute__((section(\"{section}\")))'" for name, section in
                        (("ARENA_FAST", ".bss.fast_arena"), ("ARENA_SLOW", ".bss.slow_arena"),
                         ("WEIGHTS", ".rodata.model_weights")))
    proc = strict_sanitized_selftest(bundle.out_dir, tmp_path / "strict", f"-D{M}_POISON_ARENA {sections}")
    assert proc.returncode == 0 and "selftest: PASS" in proc.stdout, proc.stdout + proc.stderr
