#!/usr/bin/env bash
# compute-sanitizer on the sampling kernels (top_p_candidates, sample_tokens):
# memcheck, racecheck, initcheck and synccheck on the small GPU cases
# (spec example, a 300-token vocabulary, CUDA Graph replay). Needs a CUDA GPU,
# PyTorch, nvcc and compute-sanitizer; builds the bindings first.
#   tests/gpu/run_sanitizer.sh            # all four tools
#   TOOLS=memcheck tests/gpu/run_sanitizer.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 setup_ops.py --bindings-only --cuda on || exit 1
status=0
for tool in ${TOOLS:-memcheck racecheck initcheck synccheck}; do
  echo "== compute-sanitizer --tool $tool"
  compute-sanitizer --tool "$tool" --error-exitcode 9 \
    python3 -m pytest -q -p no:cacheprovider -x tests/gpu/test_sampling_cuda.py \
    -k "spec_example or graph_replay or (sample_matches_reference and float32-300) or (candidates_match_reference and float32-300-64)" \
    2>&1 | tail -n 30 || status=1
done
exit $status
