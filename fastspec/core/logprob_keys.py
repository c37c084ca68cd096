"""How a log-probability and its token id travel as one int64 key (``emitted_logprobs`` writes them, the
runtime decodes them; the reference and the runtime read the layout here).

``-logprob = m * 2^(e - 23)`` with ``2^23 <= m < 2^24`` (a subnormal's ``e`` is its floor(log2), so its ``m``
is an integer too) is coded ``q = (e + 150) * 2^24 + m``; 0 codes 0, and -inf (or NaN) ``CODE_INF``, above
every finite code. ``key = (CODE_TOP - q) * 2^ID_BITS + (ID_MASK - id)``: a larger key is a larger
log-probability, then a smaller id. Key 0 is no pair at all (every pair's key is above it).
"""

ID_BITS = 28  # token ids below 2^28
ID_MASK = (1 << ID_BITS) - 1
MANTISSA = 1 << 24
CODE_INF = 1 << 33  # above every finite code ((127 + 150) * 2^24 + m < 2^33)
CODE_TOP = 1 << 34
