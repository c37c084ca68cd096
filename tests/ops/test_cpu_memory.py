"""fastspec.ops keeps freed CPU memory for the next outputs (fastspec/ops/cpu_memory.py)."""

import os
import subprocess
import sys

import pytest

from fastspec.ops.cpu_memory import keep_freed_cpu_memory
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")

# In a fresh process (the heap as glibc starts it): page faults a call of an op whose output is 3 MB
# (24 rows of 32000), each call followed by a Paddle op of its own (as in a step), after a warm-up. With
# glibc's defaults each call faults its 750 pages in again.
FAULTS_PER_CALL = """
import resource
import numpy as np
import paddle
from fastspec import ops

rows, vocab = 24, 32000
rng = np.random.default_rng(0)
def softmax(x):
    e = np.exp(x - x.max())
    return (e / e.sum()).astype(np.float32)
probs = paddle.to_tensor(np.stack([softmax(rng.normal(0.0, 5.0, vocab)) for _ in range(rows)]))
top_p, top_k = paddle.full([rows], 0.9, "float32"), paddle.zeros([rows], "int32")
batch_id = paddle.arange(rows, dtype="int32")
for _ in range(5):
    ops.top_k_top_p_probs(probs, top_p, top_k, batch_id)
    paddle.sum(probs)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    ops.top_k_top_p_probs(probs, top_p, top_k, batch_id)
    paddle.sum(probs)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 50)
"""


def test_the_setting_applies_and_can_be_declined(monkeypatch):
    assert keep_freed_cpu_memory()  # glibc here: both thresholds taken
    monkeypatch.setenv("FASTSPEC_KEEP_CPU_MEMORY", "0")
    assert not keep_freed_cpu_memory()


def test_a_megabytes_output_is_not_faulted_in_at_every_call():
    env = {k: v for k, v in os.environ.items() if k != "FASTSPEC_KEEP_CPU_MEMORY"}
    proc = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_CALL], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.split()[-1]) < 1.0, proc.stdout
