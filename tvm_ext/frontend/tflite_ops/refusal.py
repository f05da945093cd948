"""The error our own TFLite converters raise for an operator the model gets wrong: one TFLite Micro refuses or
would read as something else. The import names the layer and this message alone (TVM is not at fault)."""

from __future__ import annotations


class OperatorRefused(ValueError):
    """The model's operator cannot be compiled as the model means it; the message says why in one line."""
