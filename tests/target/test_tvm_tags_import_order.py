"""`tvm.target.Target("lowpower-cortex-m4f")` works whichever of `tvm` and `tvm_ext` a user imports first,
and `import tvm_ext` alone does not load TVM. Each case runs in a fresh interpreter (import order is
per process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

BUILD_A_TAG = (
    "t = tvm.target.Target('lowpower-cortex-m4f')\n"
    "assert list(t.keys) == ['lowpower', 'arm_cpu', 'cpu'], t.keys\n"
    "assert str(t.attrs['mcpu']) == 'cortex-m4'\n"
)


def run_fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("imports", ["import tvm_ext\nimport tvm\n", "import tvm\nimport tvm_ext\n",
                                     "import tvm_ext\nimport tvm.target\nimport tvm\n"])
def test_our_tags_exist_in_either_import_order(imports: str) -> None:
    proc = run_fresh(imports + BUILD_A_TAG)
    assert proc.returncode == 0, proc.stderr


def test_the_tags_wait_for_tvm_without_loading_it_and_leave_no_trace() -> None:
    """`import tvm_ext` loads no TVM; the later `import tvm` registers the tags, keeps TVM's own loader and
    removes our finder from sys.meta_path."""
    code = (
        "import importlib.machinery, sys\nimport tvm_ext\n"
        "assert 'tvm' not in sys.modules\n"
        "import tvm\n"
        "assert isinstance(tvm.__spec__.loader, importlib.machinery.SourceFileLoader), tvm.__spec__.loader\n"
        "assert tvm.__loader__ is tvm.__spec__.loader\n"
        "assert not [f for f in sys.meta_path if type(f).__module__.startswith('target')], sys.meta_path\n"
        + BUILD_A_TAG
    )
    proc = run_fresh(code)
    assert proc.returncode == 0, proc.stderr


def test_tvm_imported_without_torch_when_asked_and_torch_importable_after() -> None:
    """`leave_torch_out_of_tvm()` (the command line's): TVM's import loads no PyTorch, our tags exist, and a later
    `import torch` still imports it. Without the call, TVM's FFI imports torch whenever it is installed."""
    pytest.importorskip("torch")
    code = (
        "import sys\nfrom target.tvm_import_hook import leave_torch_out_of_tvm\nleave_torch_out_of_tvm()\n"
        "import tvm\n"
        "assert 'torch' not in sys.modules, 'TVM imported torch'\n"
        + BUILD_A_TAG
        + "import torch\nassert torch.zeros(2).sum().item() == 0\n"
    )
    proc = run_fresh(code)
    assert proc.returncode == 0, proc.stderr
    proc = run_fresh("import sys\nimport tvm_ext\nimport tvm\nassert 'torch' in sys.modules\n")
    assert proc.returncode == 0, "TVM no longer imports torch by itself: this case tests nothing"
