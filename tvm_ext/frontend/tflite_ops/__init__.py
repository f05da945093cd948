"""Our converters of TFLite operators TVM 0.27 does not convert, or converts wrongly: one module each
(registered in `tvm_ext.frontend`), and what they share (`refusal`, `constants`, `tensor_names`)."""
