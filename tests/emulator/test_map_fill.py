"""The flash a bundle's objects take, read off a GNU ld map file, counts the linker's fill that their alignment
asks for: cortex-m55 and cortex-m7 align each weights array to 32 B, and the padding before an array is flash the
bundle costs (session 21 found it missing from the manifest's figure)."""

from __future__ import annotations

from pathlib import Path

from emulator.sizes import bundle_flash_parts

MAP_TEXT = """\
Archive member included to satisfy reference by file (symbol)

Linker script and memory map

.text           0x00000000      0x120
 .text.m_run    0x00000000       0x1a build/m_model.o
                0x00000000                m_run
 *fill*         0x0000001a        0x2 
 .text.m_k0     0x0000001c       0x40 build/m_kernels.o
 .text.memset   0x0000005c       0x12 /usr/lib/libc.a(memset.o)
 *fill*         0x0000006e        0x2 
 .text.printf   0x00000070       0xb0 /usr/lib/libc.a(printf.o)

.weights        0x28000000       0x80
 *_weights.*(.rodata .rodata.*)
 .rodata.m_l0_bias
                0x28000000       0x30 build/m_weights.o
                0x28000000                m_l0_bias
 *fill*         0x28000030       0x10 
 .rodata.m_l0_weights
                0x28000040       0x24 build/m_weights.o
 *fill*         0x28000064       0x1c 
"""


def test_the_fill_before_a_bundle_section_is_its_flash_and_no_other(tmp_path: Path) -> None:
    """The 16 B before the 32 B-aligned l0_weights and the 2 B before a kernel count; the fill before the C
    library's printf and after the last array (nothing of ours asked for it) does not."""
    map_file = tmp_path / "selftest.map"
    map_file.write_text(MAP_TEXT, encoding="utf-8")
    parts = bundle_flash_parts(map_file, ("m_model", "m_kernels", "m_weights"))
    assert parts == {"code": 0x1a + 0x2 + 0x40, "weights": 0x30 + 0x10 + 0x24, "data": 0}
