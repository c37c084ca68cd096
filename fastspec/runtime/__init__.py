"""The runtime layer: what a model runner drives between forward passes (Paddle tensors).

``SpecState`` (the batch's tensors), ``Sampler`` (naive and verify paths, one update),
``SpecStep`` (a step as two programs: eager, static or CUDA Graph), ``generate`` (the loop over a
model callable), ``SpeculativeConfig``, ``proposers`` and ``adaptive`` (the draft-length
controller, its cost models and traces).
"""
