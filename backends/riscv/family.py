"""The RISC-V family's name: its backend's (`backends.backend.Backend.name`) and the `HelperLibrary.family` of
the helper libraries only its bundles may define."""

RISCV_FAMILY = "riscv"
