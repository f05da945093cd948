"""The C checks the end-to-end tests rely on can fail: a loop bounded by a variable is reported."""

from __future__ import annotations

from c_checks import loops_without_constant_bounds


def test_variable_loop_bound_is_reported_and_test_only_code_is_not(tmp_path):
    (tmp_path / "m_kernels.c").write_text(
        "void k(const float* x, float* y, int n) {\n  for (int32_t i = 0; i < 16; ++i) { y[i] = x[i]; }\n"
        "  for (int32_t j = 0; j < n; ++j) { y[j] = 0; }\n}\n")
    (tmp_path / "m_model.c").write_text(
        "#ifdef M_POISON_ARENA\nstatic void poison(size_t end) {\n  for (i = 0; i < end; ++i) {}\n}\n#endif\n"
        "int m_run(void) {\n  for (i = 0; i < 4u; ++i) {}\n  return 0;\n}\n")
    assert loops_without_constant_bounds(tmp_path, "m") == ["for (int32_t j = 0; j < n;"]
