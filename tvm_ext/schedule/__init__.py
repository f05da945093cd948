"""Schedules of the lowered kernels (TVM): intermediates inlined and accumulators tiled per core
(kernel_schedule.py; float tiles: float_schedule.py), a padded convolution's interior split from its border
(border_split.py, border_regions.py), an NCHW convolution's taps summed in NHWC's order (conv_tap_order.py).
A backend's own schedules (backends/<family>/schedules/) plug in through `backends.backend.MacSchedules`."""
