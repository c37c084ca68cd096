"""The dtype codes the native code reads a tensor's dtype by (``custom_ops/include/fastspec/op_call.h`` ``DType``)."""

DTYPE_CODES = {"bool": 0, "int32": 1, "int64": 2, "float32": 3, "float16": 4, "bfloat16": 5}
