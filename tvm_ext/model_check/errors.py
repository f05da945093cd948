"""The one error the model check raises, and the collector that gathers every problem of one kind.

Contract: `str(ModelError)` is exactly one line, `<model file name>: <what and where>`, with no newline and
no traceback text, so the CLI can print `tvm_ext.compile: error: <that line>` and exit with code 2.
"""

from __future__ import annotations

import enum

from printable import printable

# Problems listed in one message before the rest are summarised as "and N more".
MAX_LISTED_PROBLEMS = 12
# Layers named for one grouped problem (e.g. one unsupported operator) before the rest are counted.
MAX_LAYERS_PER_PROBLEM = 3
# Longest model-provided text (a tensor or node name) quoted in a message, in characters.
MAX_QUOTED_CHARS = 80


class ErrorKind(str, enum.Enum):
    """What is wrong, at the granularity the check reports all problems at once."""

    FILE = "file"  # cannot read the file, empty or too large
    FORMAT = "format"  # not a TFLite or ONNX model (wrong identifier, unknown extension)
    STRUCTURE = "structure"  # malformed flatbuffer or protobuf, schema version
    SUBGRAPHS = "subgraphs"  # not exactly one subgraph
    INDEX = "index"  # a tensor, buffer or operator-code index out of range
    TENSOR = "tensor"  # shape, rank, dtype or size of a tensor
    BUFFER = "buffer"  # constant data length does not match shape x dtype
    EXTERNAL_DATA = "external-data"  # ONNX tensor data stored outside the model file
    OPERATOR_VERSION = "operator-version"  # unknown operator code or version
    GRAPH = "graph"  # cycles, empty graph, unreachable or undefined tensors, input == output
    ONNX_CHECKER = "onnx-checker"  # onnx.checker (full check with shape inference) refused the model
    HYBRID = "hybrid"  # float graph with int8 weights (dynamic-range quantization)
    UNSUPPORTED_OPERATOR = "unsupported-operator"  # no converter or no kernel in our pipeline
    MEMORY_PLAN = "memory-plan"  # malformed "OfflineMemoryAllocation" metadata
    OPERATOR = "operator"  # an operator's options or tensors its TFLite Micro kernel cannot run as given
    RESOURCES = "resources"  # more operators, constant bytes or input/output bytes than the documented limits


def one_line(text: str | bytes, limit: int | None = None) -> str:
    """`text` made `printable` (control characters, newlines included, escaped), without leading or trailing
    spaces, cut to `limit` chars.

    Bytes (a name a malformed file failed to give as UTF-8) show each invalid byte as `\\xNN`.
    """
    flat = printable(text).strip()
    if limit is not None and len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    return flat


def quote(name: str | bytes) -> str:
    """A model-provided name, made printable and short, in single quotes."""
    return "'" + one_line(name, MAX_QUOTED_CHARS) + "'"


def layers_phrase(layers: list[str]) -> str:
    """`layer 'a'` or `layers 'a', 'b', 'c' and 4 more`, for a problem found at several layers."""
    named = ", ".join(quote(layer) for layer in layers[:MAX_LAYERS_PER_PROBLEM])
    more = len(layers) - MAX_LAYERS_PER_PROBLEM
    return f"layer{'s' if len(layers) > 1 else ''} {named}" + (f" and {more} more" if more > 0 else "")


class ModelError(Exception):
    """A model the compiler refuses; `str()` is one line `<model>: <message>`.

    `model` is the model's file name (no directory), `kind` says which check refused it.
    """

    def __init__(self, model: str, kind: ErrorKind, message: str) -> None:
        self.model = one_line(model)
        self.kind = kind
        self.message = one_line(message)
        super().__init__(f"{self.model}: {self.message}")


class ProblemList:
    """Collects every problem of one kind, then raises them together as one ModelError.

    Usage: `problems = ProblemList(model, ErrorKind.INDEX, "index out of range")`, `problems.add(...)`
    for each finding, `problems.raise_if_any()` at the end of the check. The message reads
    `<headline>: <problem>; <problem>; ...[; <footer>]`.
    """

    def __init__(self, model: str, kind: ErrorKind, headline: str, footer: str = "") -> None:
        self.model = model
        self.kind = kind
        self.headline = headline
        self.footer = footer
        self.items: list[str] = []

    def add(self, problem: str) -> None:
        self.items.append(problem)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        listed = self.items[:MAX_LISTED_PROBLEMS]
        text = "; ".join(listed)
        if len(self.items) > len(listed):
            text += f"; and {len(self.items) - len(listed)} more"
        if self.footer:
            text += f"; {self.footer}"
        raise ModelError(self.model, self.kind, f"{self.headline}: {text}")


def refuse_unsupported_operators(model: str, refused: dict[tuple[str, str], list[str]]) -> None:
    """ModelError(UNSUPPORTED_OPERATOR) listing each refused operator `(label, reason)` with the layers it is at
    (`refused`, in the model's order), e.g. "unsupported operators: GridSample (...) at layer 'g'"; nothing when
    `refused` is empty."""
    problems = ProblemList(model, ErrorKind.UNSUPPORTED_OPERATOR, "unsupported operators")
    for (label, reason), layers in refused.items():
        problems.add(f"{label} ({reason}) at {layers_phrase(layers)}")
    problems.raise_if_any()
