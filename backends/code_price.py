"""The backends' one price of code: what a byte of a bundle's code is worth in instructions per inference, for
every choice that trades code for speed (Cortex-M: Helium's shared depthwise copies,
``depthwise_tiles.shared_tiles``, the DSP cores' quad tiles, ``quad_tiles.quad_kernels``; RISC-V's four-channel
tiles; the compiler's kernels shared across their constants, ``tvm_ext.transform.share_constant_variants``)."""

from __future__ import annotations

from dataclasses import dataclass

INSTRUCTIONS_PER_BYTE = 100
"""The instructions per inference a byte of code is worth: 1 KB of code for 100,000 instructions, some 2 % of a
96x96 MobileNet's on cortex-m55 (vww_96_int8's 4.2 M)."""


@dataclass(frozen=True)
class KernelCode:
    """A core's estimate of a kernel's code from its TIR (`tvm_ext.transform.share_constant_variants.kernel_bytes`),
    bytes: `bytes_per_node` each expression node of its stored values and helper calls, `loop_bytes` a loop's
    control, `function_bytes` its entry and return; `constants_at_entry`, below."""

    bytes_per_node: int
    loop_bytes: int = 8
    function_bytes: int = 4
    constants_at_entry: bool = False
    """Whether a kernel shared across its constants (`tvm_ext.transform.share_constant_variants`) loads each once at
    its entry into a local value, for a core whose registers hold them across the kernel's loops; else each is
    loaded where used (an int8 store may alias them: reloaded at every element)."""


THUMB2_KERNEL_CODE = KernelCode(bytes_per_node=2)
"""Thumb-2 (cortex-m4f, cortex-m55): about one 2-byte instruction a node (gcc -Os, measured against nm sizes:
elementwise kernels 0.6-1.3x, the ViT layer norms 1.06-1.21x of the estimate)."""
