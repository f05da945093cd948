"""TIR tools every TVM stage shares, and a backend's schedules with them (so they depend on no stage): the
complete TIR walker (tir_walk.py), integer index expressions (index_expr.py), a kernel's operator kind and
window (kernel_names.py), and the TIR side of a backend's C helpers: their calls (helper_calls.py) and the
bytes each call reaches (helper_access.py)."""
