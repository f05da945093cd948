"""README's TFLite operator table is the one scripts/tflite_operator_table.py prints from the support tables (it
cannot drift from what the model check does), and those tables agree with TFLite Micro's registrations: every
operator we lower quantized is one TFLite Micro runs with that type, so there is a reference to be bit-exact with."""

from __future__ import annotations

import runpy

from conftest import REPO
from test_model_check_operator_support import tflite_builtin_names
from tvm_ext.model_check import operator_support as support


def test_readme_holds_the_operator_table_the_support_tables_give():
    table = runpy.run_path(str(REPO / "scripts" / "tflite_operator_table.py"))["table_lines"]()
    readme = (REPO / "README.md").read_text().splitlines()
    start = readme.index(table[0])
    assert readme[start:start + len(table)] == table, "README's operator table is stale: run scripts/tflite_operator_table.py"
    assert readme[start + len(table)] == "", "README's operator table has rows no support table gives"


def test_every_quantized_operator_we_lower_has_a_tflite_micro_kernel_of_its_type():
    assert support.TFLM_BUILTINS <= tflite_builtin_names()
    assert support.TFLITE_INT8_OPS <= support.TFLM_BUILTINS - support.TFLM_NO_INT8
    assert support.TFLITE_16X8_OPS <= support.TFLM_INT16 <= support.TFLM_BUILTINS
    assert set(support.TFLITE_INT8_REFUSALS) <= support.TFLM_BUILTINS - support.TFLITE_INT8_OPS - support.TFLM_NO_INT8


def test_a_quantized_operator_tflite_micro_lacks_is_refused_saying_so():
    assert "TFLite Micro has no int8 kernel" in support.tflite_refusal("EXP", quantized=True)
    assert "TFLite Micro registers no kernel" in support.tflite_refusal("GELU", quantized=True)
    assert "TFLite Micro has no int16 kernel" in support.tflite_refusal("HARD_SWISH", True, int16_activations=True)
    assert support.tflite_refusal("EXP", quantized=False) is None  # float: TVM's converter
