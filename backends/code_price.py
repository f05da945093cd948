"""The backends' one price of code: what a byte of a bundle's code is worth in instructions per inference, for
every choice that trades code for speed (Cortex-M: Helium's shared depthwise copies,
``depthwise_tiles.shared_tiles``, the DSP cores' quad tiles, ``quad_tiles.quad_kernels``; RISC-V's four-channel
tiles; the compiler's kernels shared across their constants, ``tvm_ext.transform.share_constant_variants``)."""

from __future__ import annotations

from dataclasses import dataclass

INSTRUCTIONS_PER_BYTE = 100
"""The instructions per inference a byte of code is worth: 1 KB of code for 100,000 instructions, some 2 % of a
96x96 MobileNet's on cortex-m55 (vww_96_int8's 4.2 M)."""


def code_gain(bytes_saved: int, instructions_added: int, instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> int:
    """What a choice that takes ``bytes_saved`` bytes of code out of a bundle (negative: adds them) and adds
    ``instructions_added`` instructions per inference (negative: saves them) is worth, in instructions per inference
    at ``instructions_per_byte`` each byte; positive where it pays. Helium's out-of-line copies price themselves so
    (`shared_conv_tiles`, `depthwise_tiles`)."""
    return bytes_saved * instructions_per_byte - instructions_added


@dataclass(frozen=True)
class KernelCode:
    """A core's estimate of a kernel's code from its TIR (`tvm_ext.transform.share_constant_variants.kernel_bytes`),
    bytes: `bytes_per_node` each expression node of its stored values and helper calls, `loop_bytes` a loop's
    control, `function_bytes` its entry and return; `registers`, below."""

    bytes_per_node: int
    loop_bytes: int = 8
    function_bytes: int = 4
    registers: int = 0
    """The registers a kernel's loop may hold values in (the core's general registers but those the stack, the
    program counter and a platform may reserve): a kernel shared across its constants
    (`tvm_ext.transform.share_constant_variants`) loads each once at its entry where every loop's constants and own
    values fit in them (`constants_across_loops`), else where used (an int8 store may alias them: reloaded at every
    element; loaded at entry, constants that do not fit are spilled and reloaded from the stack, with the loop's own
    values besides); 0: always where used."""


THUMB2_KERNEL_CODE = KernelCode(bytes_per_node=2)
"""Thumb-2 (cortex-m4f, cortex-m55): about one 2-byte instruction a node (gcc -Os, measured against nm sizes:
elementwise kernels 0.6-1.3x, the ViT layer norms 1.06-1.21x of the estimate)."""

THUMB2_DSP_KERNEL_CODE = KernelCode(bytes_per_node=2, registers=12)
"""The Thumb-2 cores of the DSP extension or Helium (cortex-m4f, m7, m33, m55): `THUMB2_KERNEL_CODE`'s estimate,
and r0-r12 and lr less r7 and r9 (a frame pointer, an RTOS's platform register) to hold a loop's values."""
