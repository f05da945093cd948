"""An RV32 bundle's kernels as C text, after its self-test passed bit-identical against TFLite Micro on QEMU virt:
for tests that assert which helpers an RV32 kernel calls."""

from __future__ import annotations

from emulator.tools import RISCV_TOOLS
from required_tools import require_tools


def virt_kernels(compiled, write_model, target: str = "rv32imc") -> tuple[str, str]:
    """(the bundle's model name, its `<model>_kernels.c` text) for `compiled(write_model, target)` (the session's
    bundle cache fixture); fails the test unless the self-test ran on QEMU virt and matched bit for bit."""
    require_tools(RISCV_TOOLS)
    bundle = compiled(write_model, target)
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output
    assert "(bit-identical)" in bundle.selftest.output
    return bundle.plan.model, (bundle.out_dir / f"{bundle.plan.model}_kernels.c").read_text()
