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
