"""The execution plan: the only object that crosses from the compiler into `memory_planner` and `packager`.

Plain dataclasses, no TVM objects. It lives here, in the pure-Python planner, so that neither the planner
nor the packager imports TVM or the compiler, and both can be tested on a hand-made plan. The plan lists, in execution order, the kernel calls of one model over named, typed tensors.

Contract:
- Every tensor name is a valid C identifier, unique in the plan, and stable from one build to the next.
- `ExecutionPlan.tensors` holds every tensor a call names. A tensor with `view_of` set shares the bytes of
  that tensor from its byte `view_offset` on (a reshape or flatten at 0; an UNPACK, SPLIT or SLICE piece that
  is a contiguous block of its input at the block's offset; a piece of a join written in place, which its own
  kernel writes, at the piece's offset in the join): no copy, no second buffer, its bytes inside the other's;
  chains of views are allowed (their offsets add up).
- A kernel's C arguments are, in order: `KernelCall.inputs`, `KernelCall.outputs`, `KernelCall.scratch`.
- No two CONSTANT tensors hold the same dtype, shape and bytes: the producer stores each such constant once
  and passes that one tensor to every call reading it, so each weight array is counted and emitted once.
- Bytes are bytes; shapes are element counts per dimension.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

from memory_planner.api import StreamOrder

DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "bool": 1,
    "int64": 8,
    "float64": 8,
}

class TensorRole(str, enum.Enum):
    """Where a tensor's bytes live and who owns them."""

    INPUT = "input"  # the caller's input buffer, read in place (not in the arena)
    OUTPUT = "output"  # the caller's output buffer, written in place (not in the arena)
    CONSTANT = "constant"  # weights: `const` arrays in flash, never in the arena
    INTERMEDIATE = "intermediate"  # activations between kernels: in the arena
    SCRATCH = "scratch"  # a kernel's internal buffer: in the arena for that one call
    # A variable tensor (TFLite SVDF's activation state, an LSTM's hidden and cell state): a static buffer of the
    # bundle that keeps its value from one run to the next, starts at (and `<model>_reset()` restores)
    # `ExecutionPlan.state_reset[name]` in every element; never in the arena. A kernel rewrites it through a view
    # (`view_of`) that is its output (SVDF), or in place as one of its operands (LSTM); its kernel's C signature
    # leaves that operand without `const`.
    STATE = "state"


class QuantRounding(str, enum.Enum):
    """How the model's own runtime rounds `real / scale` when it quantizes a float into a tensor: TFLite's
    QUANTIZE to nearest with ties away from zero (TfLiteRound, std::round), ONNX's QuantizeLinear to nearest
    with ties to even."""

    HALF_AWAY_FROM_ZERO = "half_away_from_zero"
    HALF_TO_EVEN = "half_to_even"


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization: real = scale * (q - zero_point); per tensor (axis None: one scale and one zero
    point) or per channel along `axis` (one of each per index of that axis). Scales are float32 values (held
    as Python floats, exactly); `rounding` is how the model's runtime quantizes into the tensor."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None
    rounding: QuantRounding = QuantRounding.HALF_AWAY_FROM_ZERO

    @property
    def per_tensor(self) -> bool:
        return self.axis is None

    def facts(self) -> dict:
        """The quantization as JSON-ready data: scale and zero point (lists when per channel, with the axis)."""
        if self.per_tensor:
            entry: dict = {"scale": self.scale[0], "zero_point": self.zero_point[0]}
        else:
            entry = {"scale": list(self.scale), "zero_point": list(self.zero_point), "axis": self.axis}
        return {**entry, "rounding": self.rounding.value}


@dataclass(frozen=True)
class Tensor:
    """One tensor of the plan.

    `layer` names the model layer (TFLite operator output / ONNX node) that produces it, or the model's
    input name. `layout` is "NHWC", "NCHW" or "" when the tensor has no image layout. `view_offset`: bytes
    from the start of `view_of` to this view's first byte (0 when it is no view).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: TensorRole
    layer: str = ""
    quant: QuantParams | None = None
    view_of: str | None = None
    layout: str = ""
    view_offset: int = 0

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the tensor's data occupies (no padding)."""
        return self.elements * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class InplaceOutput:
    """A kernel may write tensor `output` over bytes of its input tensor `input`: element by element at the
    same offsets (it reads each input element before it writes the output element there, and the output
    is not larger) when `stream` is None, else in the order `stream` gives (bytes relative to each tensor)."""

    output: str
    input: str
    stream: StreamOrder | None = None


@dataclass(frozen=True)
class KernelAccess:
    """What a kernel's access order allows the memory planner to do (facts, not requests): the outputs it
    may write over its inputs' bytes."""

    inplace_outputs: tuple[InplaceOutput, ...] = ()


@dataclass(frozen=True)
class ModelOperator:
    """One operator of the model file a call implements: its name there (may be empty), its kind (TFLite
    operator code such as "CONV_2D", ONNX op type such as "Conv") and its index among the model's operators."""

    name: str
    kind: str
    index: int


@dataclass(frozen=True)
class OperatorSupport:
    """One operator kind of the model file: how many times it occurs and why our compiler refuses it (None: it
    is supported). A kind refused at some layers only (int8 at one, float at another) has a row per reason.
    `tvm-ext-compile --analyze` lists them before compiling, a bundle's report.html after."""

    op: str
    count: int
    refusal: str | None


@dataclass(frozen=True)
class KernelCall:
    """One call of a generated kernel: `kernel(inputs..., outputs..., scratch...)`.

    `layers` are the comments' labels of the model operators the call implements, `operators` the same
    operators as data (empty for a hand-made plan); `macs` its multiply-accumulates as the producer counts
    them (iterations of a reduction that adds a product, padded taps included; 0 when not counted);
    `checks_indices`: the kernel checks indices read from data before it writes anything and returns
    nonzero for one outside its axis (KernelSignature.checks_indices), which the run function reports;
    `stack_array_bytes`: the local arrays the kernel keeps on the stack (KernelSignature.stack_array_bytes).
    """

    kernel: str
    layers: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    scratch: tuple[str, ...] = ()
    access: KernelAccess = field(default_factory=KernelAccess)
    subgraph: int = 0
    operators: tuple[ModelOperator, ...] = ()
    macs: int = 0
    checks_indices: bool = False
    stack_array_bytes: int = 0

    @property
    def args(self) -> tuple[str, ...]:
        """The kernel's C arguments in order."""
        return self.inputs + self.outputs + self.scratch


@dataclass(frozen=True)
class KernelParameter:
    """One pointer parameter of a generated kernel: its C name (ours), element dtype, whether only read."""

    name: str
    dtype: str
    read_only: bool


@dataclass(frozen=True)
class ScratchBuffer:
    """A kernel-internal buffer passed as a pointer parameter: its element type and its bytes."""

    dtype: str
    nbytes: int


@dataclass(frozen=True)
class ParameterStream:
    """In what order a kernel writes its output parameter `output` (index among its outputs) while it reads
    its input parameter `input` (index among its inputs): bytes relative to each parameter's pointer."""

    output: int
    input: int
    order: StreamOrder


@dataclass(frozen=True)
class KernelSignature:
    """A generated kernel's C parameters: `num_inputs` inputs, then `num_outputs` outputs, then scratch.

    `parameters` holds all of them in that order; `scratch` the sizes of the last `len(scratch)`; `streams`
    the access orders known for (output, input) pairs of parameters. With `checks_indices` the kernel returns
    int32_t: 0 when it ran, nonzero when an index it read from data lies outside its axis (then it wrote
    nothing: the producer generates that check before the kernel's first store); without, it returns void.
    `stack_array_bytes`: the bytes of the local arrays the kernel's C declares (on the stack, beside its
    scalars; tvm_ext.codegen.codegen_c.stack_array_bytes).
    """

    name: str
    num_inputs: int
    num_outputs: int
    scratch: tuple[ScratchBuffer, ...]
    parameters: tuple[KernelParameter, ...]
    streams: tuple[ParameterStream, ...] = ()
    checks_indices: bool = False
    stack_array_bytes: int = 0


ROWS_FETCH_KERNEL = "lp_rows_fetch"
"""The kernel name of a RowFetch call (packager/templates/lp_rows.h): not a generated kernel."""

ROWS_KEEP_KERNEL = "lp_rows_keep"
"""The kernel name of a RowKeep call (packager/templates/lp_rows.h): not a generated kernel."""


@dataclass(frozen=True)
class RowFetch:
    """One band of the row-wise input: the call (kernel ROWS_FETCH_KERNEL, inputs (`halo`,) or (), outputs
    (`band`,)) that fills the arena tensor `band` (input rows [first_row, stop_row) of the whole input, all
    columns): first the rows [first_row, pulled_from) kept from the band before (`halo`, None when there are
    none), then rows [pulled_from, stop_row) asked of the application, one at a time, in increasing order."""

    band: str
    halo: str | None
    first_row: int
    pulled_from: int
    stop_row: int


@dataclass(frozen=True)
class RowKeep:
    """The call (kernel ROWS_KEEP_KERNEL, inputs (`band`,), outputs (`halo`,)) that copies the last rows of
    `band` from byte `offset` on into `halo` (whose bytes it fills), for the next band."""

    band: str
    halo: str
    offset: int


@dataclass(frozen=True)
class RowInput:
    """The model input `input` (NHWC, `rows` rows of `row_bytes` bytes) is not held: the application gives its
    rows as the run asks for them (`fetches`, in the order they run), and no call reads `input` itself."""

    input: str
    rows: int
    row_bytes: int
    fetches: tuple[RowFetch, ...]
    keeps: tuple[RowKeep, ...]

    def fetch_of(self, call: "KernelCall") -> RowFetch | None:
        """The fetch `call` runs, None when it is no ROWS_FETCH_KERNEL call."""
        if call.kernel != ROWS_FETCH_KERNEL:
            return None
        return next(f for f in self.fetches if f.band == call.outputs[0])

    def keep_of(self, call: "KernelCall") -> RowKeep | None:
        """The keep `call` runs, None when it is no ROWS_KEEP_KERNEL call."""
        if call.kernel != ROWS_KEEP_KERNEL:
            return None
        return next(k for k in self.keeps if k.halo == call.outputs[0])


@dataclass
class ExecutionPlan:
    """The ordered kernel calls of one model's main function over its tensors."""

    model: str  # C identifier used as the bundle's prefix
    source: str  # the model file's base name, no folder (or "<relax module>")
    target: str  # the target profile's name
    tensors: dict[str, Tensor]
    calls: list[KernelCall]
    inputs: list[str]
    outputs: list[str]
    state_reset: dict[str, int] = field(default_factory=dict)  # STATE tensor name -> its value after a reset
    row_input: RowInput | None = None  # the input given row by row (None: every input is a whole buffer)

    def states(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.role is TensorRole.STATE]

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def storage_of(self, name: str) -> str:
        """The tensor whose bytes `name` uses: itself, or the root of its chain of views."""
        tensor = self.tensors[name]
        while tensor.view_of is not None:
            tensor = self.tensors[tensor.view_of]
        return tensor.name

    def storage_offset(self, name: str) -> int:
        """Bytes from the start of `storage_of(name)` to the first byte of `name`: its chain's view offsets."""
        tensor, offset = self.tensors[name], 0
        while tensor.view_of is not None:
            offset += tensor.view_offset
            tensor = self.tensors[tensor.view_of]
        return offset

    def constants(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.role is TensorRole.CONSTANT]

    def total_macs(self) -> int:
        """Multiply-accumulates of one inference: every call's (`Call.macs`) summed."""
        return sum(call.macs for call in self.calls)

    def weight_bytes(self) -> int:
        """Bytes of the bundle's weight arrays: each CONSTANT tensor once, however many calls read it. The
        producer's duty (see the module's contract): no two CONSTANT tensors share dtype, shape and bytes."""
        return sum(t.nbytes for t in self.constants())
