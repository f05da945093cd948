"""The C both validation drivers share (`host_run`, `emulated_run`): the bundle's header, a static buffer per
argument of its run function, and the run of one sample, written from the header's macros alone
(`<PREFIX>_INPUTk_TYPE`, `_ELEMENTS`, `<PREFIX>_OK`, the prefix as `packager.c_text.macro_prefix` makes it):
no name from the model reaches C."""

from __future__ import annotations

from packager.c_text import macro_prefix


def io_buffers(name: str, inputs: int, outputs: int) -> list[str]:
    """`#include "<name>.h"` and the static buffers `in0`..., `out0`... of the run function's arguments."""
    prefix = macro_prefix(name)
    return [f'#include "{name}.h"',
            *(f"static {prefix}_INPUT{k}_TYPE in{k}[{prefix}_INPUT{k}_ELEMENTS];" for k in range(inputs)),
            *(f"static {prefix}_OUTPUT{k}_TYPE out{k}[{prefix}_OUTPUT{k}_ELEMENTS];" for k in range(outputs))]


def run_one(name: str, inputs: int, outputs: int, stateful: bool, on_failure: str) -> list[str]:
    """The statements (in a loop over the samples, indented for it) that run the bundle on the buffers: a
    stateful bundle reset first (every sample a first run, as the reference runtime runs it), then the run
    call, with `on_failure` (statements, `status` holding the call's result) when it is not `<PREFIX>_OK`."""
    arguments = ", ".join([f"in{k}" for k in range(inputs)] + [f"out{k}" for k in range(outputs)])
    return [*([f"    {name}_reset();"] if stateful else []),
            f"    status = {name}_run({arguments});",
            f"    if (status != {macro_prefix(name)}_OK) {{ {on_failure} }}"]
