"""The runtime layer: what a model runner drives between forward passes (Paddle tensors).

``SpecState`` (the batch's tensors), ``Sampler`` (naive and verify paths, one update),
``SpecStep`` (a step as two programs: eager, static or CUDA Graph), ``SpecEngine`` (the loop a server
drives: requests added, streamed, aborted and preempted step by step; ``ranks`` for tensor-parallel
ranks), ``generate`` (a fixed set of requests through an engine), ``SpeculativeConfig``, ``proposers`` and ``adaptive`` (the draft-length
controller, its cost models and traces).
"""
