"""The profile as a resource constraint: check_fits at the exact byte, and the manifest's headroom."""

from __future__ import annotations

import pytest

import target

M0PLUS = target.load_profile("cortex-m0plus")  # 32,768 B SRAM, 262,144 B flash


def test_message_matches_the_issue_example_for_vww_96_float_on_cortex_m0plus():
    # 321,808 B is vww_96_float's arena under TFLite Micro (../shared/docs/cortex-m-under-qemu.md).
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "vww_96_float", arena_bytes=321_808, flash_bytes=100_000)
    assert str(error.value) == (
        "vww_96_float: arena needs 321,808 B of SRAM but cortex-m0plus has 32,768 B (289,040 B over)"
    )


def test_arena_exactly_at_the_sram_limit_fits_and_one_byte_more_does_not():
    target.check_fits(M0PLUS, "m", arena_bytes=32_768, flash_bytes=262_144)
    with pytest.raises(target.ResourceError, match=r"^m: arena needs 32,769 B of SRAM .* \(1 B over\)$"):
        target.check_fits(M0PLUS, "m", arena_bytes=32_769, flash_bytes=262_144)


def test_flash_exactly_at_the_limit_fits_and_one_byte_more_does_not():
    target.check_fits(M0PLUS, "m", arena_bytes=0, flash_bytes=262_144)
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "m", arena_bytes=0, flash_bytes=262_145)
    assert str(error.value) == ("m: weights + code need 262,145 B of flash but cortex-m0plus has 262,144 B (1 B over)")


def test_both_limits_exceeded_are_named_on_one_line():
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "ad01_fp32", arena_bytes=40_000, flash_bytes=1_100_000)
    message = str(error.value)
    assert "\n" not in message
    assert message == (
        "ad01_fp32: arena needs 40,000 B of SRAM but cortex-m0plus has 32,768 B (7,232 B over); "
        "weights + code need 1,100,000 B of flash but cortex-m0plus has 262,144 B (837,856 B over)"
    )


def test_headroom_is_limit_minus_use_and_goes_negative_when_over():
    room = target.headroom(M0PLUS, arena_bytes=30_000, flash_bytes=300_000)
    assert room["profile"] == "cortex-m0plus"
    assert (room["sram_bytes"], room["arena_bytes"], room["sram_headroom_bytes"]) == (32_768, 30_000, 2_768)
    assert (room["flash_bytes"], room["flash_used_bytes"], room["flash_headroom_bytes"]) == (
        262_144,
        300_000,
        -37_856,
    )
    assert room["profile_source"] == "target/profiles/cortex-m0plus.toml"
