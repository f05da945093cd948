"""The profile as a resource constraint: check_fits counts every part of the RAM (arena, inputs and outputs
outside it, state, stack) at the exact byte and names them; the manifest's headroom."""

from __future__ import annotations

import dataclasses

import pytest

import target
from target.resources import FlashSource, FlashUse, Overrun, RamUse, StackSource

M0PLUS = target.load_profile("cortex-m0plus")  # 32,768 B SRAM, 262,144 B flash
BOARD = dataclasses.replace(M0PLUS, name="my-board", sram_bytes=10_400)
# kws_ref_model on cortex-m0plus: its arena, its int8 input (49 x 10) and output (12), its run call's stack as
# the emulated board measured it.
KWS = RamUse(arena_bytes=10_048, input_bytes=490, output_bytes=12, state_bytes=0, stack_bytes=212,
             stack_source=StackSource.MEASURED)


def test_a_board_that_holds_the_arena_but_not_the_whole_ram_refuses_it_naming_every_part():
    """The issue's example: a board with 10,400 B of SRAM accepted kws, whose arena alone fits."""
    assert KWS.arena_bytes <= BOARD.sram_bytes
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(BOARD, "kws_ref_model", KWS, flash_bytes=100_000)
    assert str(error.value) == (
        "kws_ref_model: RAM needs 10,762 B of SRAM (arena 10,048 B + inputs 490 B + outputs 12 B + state 0 B + "
        "stack 212 B measured on the emulated board) but my-board has 10,400 B (362 B over)")


def test_before_the_emulated_build_the_stack_is_named_as_not_yet_counted():
    pending = dataclasses.replace(KWS, stack_bytes=0, stack_source=StackSource.PENDING)
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(BOARD, "kws_ref_model", pending, flash_bytes=100_000)
    assert str(error.value) == (
        "kws_ref_model: RAM needs 10,550 B of SRAM (arena 10,048 B + inputs 490 B + outputs 12 B + state 0 B; "
        "stack not yet counted: measured after the build) but my-board has 10,400 B (150 B over)")


def test_without_a_measurement_the_profile_s_stack_bound_is_counted():
    bound = RamUse(1_000, 0, 0, 24, M0PLUS.stack_bound_bytes, StackSource.BOUND)
    small = dataclasses.replace(M0PLUS, sram_bytes=2_047)
    with pytest.raises(target.ResourceError, match=r"\+ state 24 B \+ stack 1,024 B the profile's stack_bound_bytes\)"
                                                   r" but cortex-m0plus has 2,047 B \(1 B over\)$"):
        target.check_fits(small, "m", bound, flash_bytes=1)
    target.check_fits(dataclasses.replace(small, sram_bytes=2_048), "m", bound, flash_bytes=1)


@pytest.mark.parametrize("part", ["arena_bytes", "input_bytes", "output_bytes", "state_bytes", "stack_bytes"])
def test_every_part_counts_to_the_byte(part: str):
    exactly = RamUse(32_000, 400, 200, 100, 68, StackSource.MEASURED)
    assert exactly.total_bytes == M0PLUS.sram_bytes
    target.check_fits(M0PLUS, "m", exactly, flash_bytes=262_144)
    one_more = dataclasses.replace(exactly, **{part: getattr(exactly, part) + 1})
    with pytest.raises(target.ResourceError, match=r"^m: RAM needs 32,769 B of SRAM .* \(1 B over\)$"):
        target.check_fits(M0PLUS, "m", one_more, flash_bytes=262_144)


def test_flash_exactly_at_the_limit_fits_and_one_byte_more_does_not():
    nothing = RamUse(0, 0, 0, 0, 0, StackSource.MEASURED)
    target.check_fits(M0PLUS, "m", nothing, flash_bytes=262_144)
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "m", nothing, flash_bytes=262_145)
    assert str(error.value) == ("m: weights + code need 262,145 B of flash but cortex-m0plus has 262,144 B (1 B over)")


def test_both_limits_exceeded_are_named_on_one_line():
    ram = RamUse(40_000, 0, 0, 0, 100, StackSource.MEASURED)
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "ad01_fp32", ram, flash_bytes=1_100_000)
    message = str(error.value)
    assert "\n" not in message
    assert message == (
        "ad01_fp32: RAM needs 40,100 B of SRAM (arena 40,000 B + inputs 0 B + outputs 0 B + state 0 B + stack 100 B "
        "measured on the emulated board) but cortex-m0plus has 32,768 B (7,332 B over); "
        "weights + code need 1,100,000 B of flash but cortex-m0plus has 262,144 B (837,856 B over)"
    )
    assert error.value.overruns == (Overrun("SRAM", 40_100, 32_768), Overrun("flash", 1_100_000, 262_144))
    assert [overrun.excess_bytes for overrun in error.value.overruns] == [7_332, 837_856]


def test_headroom_is_limit_minus_the_whole_ram_and_goes_negative_when_over():
    room = target.Headroom(M0PLUS, RamUse(30_000, 490, 12, 8, 212, StackSource.MEASURED),
                           FlashUse(250_000, 49_000, 1_000, FlashSource.MEASURED)).manifest_entry()
    assert room["profile"] == "cortex-m0plus"
    assert (room["sram_bytes"], room["arena_bytes"], room["total_ram_bytes"], room["sram_headroom_bytes"]) == (
        32_768, 30_000, 30_722, 2_046)
    assert (room["input_bytes_outside_arena"], room["output_bytes_outside_arena"], room["state_bytes"],
            room["stack_bytes"], room["stack_source"]) == (490, 12, 8, 212, "measured")
    assert (room["flash_bytes"], room["flash_used_bytes"], room["flash_headroom_bytes"]) == (
        262_144,
        300_000,
        -37_856,
    )
    assert (room["flash_weights_bytes"], room["flash_code_bytes"], room["flash_data_bytes"], room["flash_counted"]) == (
        250_000, 49_000, 1_000, "measured")
    assert room["profile_source"] == "target/profiles/cortex-m0plus.toml"


def test_a_profile_file_may_give_its_stack_bound(tmp_path):
    board = tmp_path / "board.toml"
    board.write_text('extends = "lowpower"\nname = "my-board"\nstack_bound_bytes = 4_096\n')
    assert target.load_profile(board).stack_bound_bytes == 4_096
    assert target.load_profile("lowpower").stack_bound_bytes == 1_024


def test_the_flash_counted_with_its_code_names_every_part_and_the_excess():
    """The flash the emulated build measured: weights, code and the .data image; at the limit it fits."""
    nothing = RamUse(0, 0, 0, 0, 0, StackSource.MEASURED)
    target.check_fits(M0PLUS, "m", nothing, FlashUse(233_602, 28_000, 542, FlashSource.MEASURED))
    with pytest.raises(target.ResourceError) as error:
        target.check_fits(M0PLUS, "person_detect", nothing, FlashUse(233_602, 33_048, 0, FlashSource.MEASURED))
    assert str(error.value) == (
        "person_detect: weights + code need 266,650 B of flash (weights 233,602 B + code 33,048 B + data 0 B "
        "measured in the emulated board's linked self-test) but cortex-m0plus has 262,144 B (4,506 B over)")
    assert error.value.overruns == (Overrun("flash", 266_650, 262_144),)


@pytest.mark.parametrize("source, words", [
    (FlashSource.PENDING, "code not yet counted: measured after the build"),
    (FlashSource.WEIGHTS_ONLY, "code not counted: not built and measured on an emulated board")])
def test_weights_alone_are_called_weights_and_say_the_code_is_not_counted(source: FlashSource, words: str):
    flash = FlashUse.weights_only(262_145, source)
    assert (flash.total_bytes, flash.measured) == (262_145, False)
    with pytest.raises(target.ResourceError) as error:
        target.check_flash_fits(M0PLUS, "m", flash)
    assert str(error.value) == f"m: weights need 262,145 B of flash ({words}) but cortex-m0plus has 262,144 B (1 B over)"
    entry = target.Headroom(M0PLUS, RamUse(0, 0, 0, 0, 0, StackSource.BOUND), flash).manifest_entry()
    assert (entry["flash_used_bytes"], entry["flash_code_bytes"], entry["flash_counted"]) == (
        262_145, 0, source.name.lower())
