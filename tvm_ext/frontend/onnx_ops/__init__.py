"""Our converters of ONNX operators TVM 0.27 has none for (QLinearConv, QLinearMatMul, ConvInteger, ...),
the QDQ fusion before import, and ConvTranspose's output_shape."""
