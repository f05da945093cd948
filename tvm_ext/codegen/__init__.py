"""Scheduled PrimFuncs -> plain C kernels (TVM): our TIR pipeline and TVM's C codegen (codegen_c.py), run
per subgraph in forked workers (subgraph_codegen.py); the TIR rewrites it runs (exact_float_constants.py,
padding_test_hoist.py, libm_lowering.py), every access checked or proved (index_checks.py), and each
kernel's stream orders read from its TIR (stream_order.py)."""
