#!/usr/bin/env bash
# Every GPU check in one command, for a host with a CUDA GPU, PyTorch and nvcc
# but no Paddle (see docs/DEVELOPING.md): build the bindings, run tests/gpu,
# compute-sanitizer memcheck and racecheck on a small run, and the CUDA
# benchmarks. Logs and JSON go to ${OUT:-gpu_out}.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu_out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0

python3 setup_ops.py --bindings-only --cuda on 2>&1 | tee "$out/build.log" || exit 1
python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tee "$out/tests.log" || status=1
for tool in memcheck racecheck; do
  compute-sanitizer --tool "$tool" --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider -x tests/gpu -k "spec_example or graph_replay" \
    2>&1 | tail -n 30 | tee "$out/sanitizer_$tool.log" || status=1
done
# the benchmarks with a CUDA path (--device cuda); the others time the CPU only
for bench in bench_{ngram_match,ngram_append,sampling,verify_update,rejection_target}; do
  python3 -m "bench.$bench" --device cuda 2>&1 | tee "$out/$bench.log" || status=1
done
cp bench/results/*.json "$out/" 2>/dev/null || true
exit $status
