"""fastspec: speculative-decoding ops for PaddlePaddle (CPU, CUDA, XPU).

``fastspec.ops`` holds the Paddle ops (importing it loads the compiled
library and Paddle); ``fastspec.reference`` is the numpy contract and needs
neither; ``fastspec.kernels`` runs the kernels from any framework through raw
pointers.
"""

__version__ = "0.1.0"
