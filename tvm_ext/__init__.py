"""tvm_ext: TFLite/ONNX models to framework-free C bundles for low-power processors, as a TVM plugin.

Importing this package does not import TVM: `tvm_ext.plan` is plain data that `memory_planner` and
`packager` use without loading TVM.
"""
