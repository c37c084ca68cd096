#!/usr/bin/env bash
# GPU speed in one command, for a CUDA host with PyTorch and nvcc but no Paddle and no registry:
# FlashInfer from the carried source release (tools/fetch_gpu_peers.py puts it in .peers/), the
# bindings built with CUDA, the correctness tests, then bench/bench_gpu.py (every target, with the
# peers in the same process) and the CUDA paths of the per-op benchmarks. Logs, JSON and the
# Markdown table go to ${OUT:-gpu_out} and bench/results/. Budget: under 8 minutes on an H100/H200.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu_out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" FASTSPEC_CUDA_ARCHS="${FASTSPEC_CUDA_ARCHS:-90}"
status=0
SECONDS=0

peer=$(ls .peers/flashinfer_python-*.tar.gz 2>/dev/null | head -n 1)
if [ -n "$peer" ]; then  # a source tree on PYTHONPATH: its JIT reads headers from flashinfer/data/
  mkdir -p /tmp/peers && tar xzf "$peer" -C /tmp/peers
  src=$(ls -d /tmp/peers/flashinfer_python-*/ | head -n 1)
  src=${src%/}
  mkdir -p "$src/flashinfer/data"
  for d in include csrc tvm_binding; do ln -sfn "$src/$d" "$src/flashinfer/data/$d"; done
  for d in cutlass spdlog; do ln -sfn "$src/3rdparty/$d" "$src/flashinfer/data/$d"; done
  export PYTHONPATH="$PYTHONPATH:$src" MAX_JOBS="${MAX_JOBS:-16}"
else
  echo "no .peers/flashinfer_python-*.tar.gz: the FlashInfer columns stay empty (python tools/fetch_gpu_peers.py)"
fi

python3 setup_ops.py --bindings-only --cuda on 2>&1 | tee "$out/build.log" || exit 1
echo "== build done at ${SECONDS}s"
python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -n 15 | tee "$out/tests.log" || status=1
echo "== tests done at ${SECONDS}s"
python3 -m bench.bench_gpu 2>&1 | tee "$out/bench_gpu.log" || status=1
echo "== bench_gpu done at ${SECONDS}s"
python3 -m bench.bench_ngram_match --device cuda 2>&1 | tee "$out/bench_ngram_match.log" || status=1
echo "== all done at ${SECONDS}s"
cp bench/results/gpu_*.json bench/results/gpu_*.md bench/results/ngram_match_cuda*.json "$out/" 2>/dev/null || true
exit $status
