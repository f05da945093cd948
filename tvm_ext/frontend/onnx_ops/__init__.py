"""Our ONNX rewrites and converters (the sizes computed from static shapes are folded by the model check's
onnx_fold_shapes): onnxruntime's QDQ fusions (qdq_fusion, on qdq_graph's facts), converters of the operators
TVM 0.27 has none for (QLinearConv, QLinearMatMul,
onnxruntime's com.microsoft QLinear operators, ConvInteger, ...), and the forms of ConvTranspose's output_shape,
Clip and Resize TVM's converters get wrong."""
