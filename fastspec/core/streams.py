"""The random streams of ``rand64(seed, position, stream)`` (docs/ops/conventions.md): one per kind
of draw, so the draws of different decisions at one position never coincide. The reference
(``fastspec.reference.rng``) and the runtime (a draft model samples on ``STREAM_DRAFT``) read them here."""

STREAM_TARGET = 1  # the target model's samples
STREAM_TOPP = 2  # TOPP verification's corrections
STREAM_ACCEPT = 3  # REJECTION's acceptance coins
STREAM_RESAMPLE = 4  # REJECTION's and BLOCK's corrections and bonus draws
STREAM_DRAFT = 5  # a draft model's samples
STREAM_BLOCK = 6  # BLOCK's coins: position = the step's step_idx, index = the prefix length
