"""Helpers shared by the test suite and the benchmarks: random probability rows
(``sampling_cases``) and CUDA Graph capture over the pointer API (``cuda``).
Not part of the op API; numpy only at import time."""
