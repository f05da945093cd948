"""torchvision's classification models beside the CPU build of torch the ``models`` extra installs.

PyPI's torchvision wheels carry a C extension (``torchvision/_C.so``) linked against torch's CUDA libraries; beside
torch's CPU build it does not load. torchvision guards its operators' fake kernels on the extension having loaded
(``extension._has_ops()``), except those of ``torchvision::nms`` and ``torchvision::qnms`` (registered
unconditionally in ``_meta_registrations.py`` of 0.28), so ``import torchvision`` raises "operator
torchvision::nms does not exist". Defining those two operators' schemas, as the extension would, lets torchvision
import. Its models (pure PyTorch modules) then build and export; nothing here calls either operator, which has
no kernel and would raise if called."""

from __future__ import annotations

import types
from importlib.util import find_spec

import pytest

# The operators whose fake kernels torchvision registers without checking that its extension defined them.
UNGUARDED_SCHEMAS = {name: f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
                     for name in ("nms", "qnms")}

# The library that owns the schema must outlive the import: dropping it would undefine the operator.
_schema_library = None


def import_torchvision() -> types.ModuleType:
    """``torchvision``, imported (skipping the test when it is not installed); defines the schemas of
    ``UNGUARDED_SCHEMAS`` first when torchvision's C extension has not defined them."""
    global _schema_library
    torch = pytest.importorskip("torch")
    if find_spec("torchvision") is None:  # importing it to find out would raise before the schema is defined
        pytest.skip("torchvision is not installed (the models extra installs it)")
    if _schema_library is None and not _defined(torch, "nms"):
        _schema_library = torch.library.Library("torchvision", "DEF")
        for schema in UNGUARDED_SCHEMAS.values():
            _schema_library.define(schema)
    import torchvision

    return torchvision


def _defined(torch: types.ModuleType, operator: str) -> bool:
    try:
        getattr(torch.ops.torchvision, operator)  # raises when the schema is missing
    except (AttributeError, RuntimeError):
        return False
    return True
