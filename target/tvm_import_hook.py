"""Our profiles become TVM target tags as soon as TVM is imported, in whichever order a user imports things.

`register_when_tvm_is_imported()` registers the tags at once when TVM is loaded already. Otherwise it puts a
one-shot finder at the front of `sys.meta_path`: when `import tvm` (or `import tvm.<anything>`) first runs,
the finder hands the import to the ordinary finders and wraps only the loader they return, so that right
after TVM's own `__init__` has run, `target.register_with_tvm()` registers every built-in profile; the finder
then removes itself. TVM's module keeps TVM's own loader (`tvm.__spec__.loader`); nothing else is imported
or changed, and a process that never imports TVM never loads it.

`leave_torch_out_of_tvm()`, for processes of our own (the command line): TVM's FFI package imports PyTorch,
when it is installed, at its own import (to order two libraries' symbols on one Windows configuration) and loads
torch's DLPack extension. No compile uses either, and PyTorch's import is most of TVM's: `import tvm` took 7.3 s of
CPU with torch installed and 2.4 s with it left out (this machine). With it, TVM's import sees no torch; a later
`import torch` in the same process imports it as usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

_TVM = "tvm"
_TORCH = "torch"
_leave_torch_out = False


def register_when_tvm_is_imported() -> None:
    """Make `tvm.target.Target("lowpower-cortex-m4f")` work whether TVM is imported before or after this call.

    Calling it again changes nothing.
    """
    if _TVM in sys.modules:
        _register_builtin_tags()
    elif not any(isinstance(finder, _TvmImportFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _TvmImportFinder())


def leave_torch_out_of_tvm() -> None:
    """Make this process's first `import tvm` run without PyTorch (see the module's docstring). Changes nothing
    when TVM is imported already, or torch is: then there is nothing left to save."""
    global _leave_torch_out
    _leave_torch_out = True
    register_when_tvm_is_imported()


def _register_builtin_tags() -> None:
    from target.tvm_tags import register_with_tvm

    register_with_tvm()


class _TvmImportFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for `tvm` it asks the other finders and returns their spec with a wrapped loader."""

    def __init__(self) -> None:
        self._asking_others = False

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TVM or self._asking_others:
            return None
        self._asking_others = True
        try:
            spec = importlib.util.find_spec(_TVM)
        finally:
            self._asking_others = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _RegisteringLoader(spec.loader, self)
        return spec


class _RegisteringLoader(importlib.abc.Loader):
    """TVM's own loader, followed by the tag registration once TVM's package has finished executing."""

    def __init__(self, tvm_loader: importlib.abc.Loader, finder: _TvmImportFinder) -> None:
        self._tvm_loader = tvm_loader
        self._finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._tvm_loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__.loader = module.__loader__ = self._tvm_loader  # TVM sees only its own loader
        hide_torch = _leave_torch_out and _TORCH not in sys.modules
        if hide_torch:
            sys.modules[_TORCH] = None  # `import torch` raises ImportError, which TVM's FFI takes as "not installed"
        try:
            self._tvm_loader.exec_module(module)
        finally:
            if hide_torch and sys.modules.get(_TORCH, False) is None:
                del sys.modules[_TORCH]
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        _register_builtin_tags()
