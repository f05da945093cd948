"""Run a bundle's self-test on an emulated board (QEMU's MPS2/MPS3 Arm boards, its RISC-V virt machine) and
measure it; no TVM import.

The backends' runners (`backends.backend.EmulatedRunner`: `backends.cortex_m.runner`, `backends.riscv.runner`)
write the bundle's support files (OUT/cortex_m/, OUT/riscv/) and call this package, which runs and measures
what was written. Import the module you need (this file imports none of them, so that
`emulator.selftest`, which reads the bundle layout from `backends.cortex_m.bundle_files.support`, forms no import cycle):

- `boards`: the board table (memory map, QEMU machine, timer, UART0), the exit marker, and the compile target
  record (cpu flags).
- `tools`: the host programs needed (`missing_tools()`).
- `qemu`: `run_qemu(elf, board, timeout_s)` -> the program's exit status (its exit marker), its UART output,
  instructions per inference; the board program gets no capability on the host (no semihosting, no network).
- `sizes`: `read_sizes(elf, su_files, ...)` -> flash/RAM bytes and the stack peak of the run call.
- `selftest`: `run_selftest(out_dir, name, target)`: build, run and measure in one call (manifest entry);
  `measure_selftest` runs and measures a built ELF on any board.
- `stack`: the stack peak method (-fstack-usage frames along the call graph of the linked ELF; `CodeReading`:
  Arm's or RISC-V's binutils and instructions).
"""
