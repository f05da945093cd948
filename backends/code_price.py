"""The backends' one price of code: what a byte of a bundle's code is worth in instructions per inference, for
every choice that trades code for speed (Cortex-M: Helium's shared depthwise copies,
``depthwise_tiles.shared_tiles``, the DSP cores' quad tiles, ``quad_tiles.quad_kernels``; RISC-V's four-channel
tiles; the compiler's kernels shared across their constants, ``tvm_ext.transform.share_constant_variants``)."""

INSTRUCTIONS_PER_BYTE = 100
"""The instructions per inference a byte of code is worth: 1 KB of code for 100,000 instructions, some 2 % of a
96x96 MobileNet's on cortex-m55 (vww_96_int8's 4.2 M)."""
