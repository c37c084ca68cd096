#!/usr/bin/env bash
# Formats the repository: Python with ruff (imports sorted, then `ruff format`; pyproject.toml's
# [tool.ruff]), C++ / CUDA / XPU under custom_ops/ and bench/ with clang-format (.clang-format).
#
#   tools/format.sh            rewrite the files in place
#   tools/format.sh --check    change nothing; exit 1 and list what is not formatted
#
# Both tools come from requirements-test.txt (pinned); PYTHON picks the environment (default .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
bin=$(dirname "$python")
ruff=("$python" -m ruff)
clang_format=${CLANG_FORMAT:-$bin/clang-format}
[ -x "$clang_format" ] || clang_format=clang-format

mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: tools/format.sh [--check]" >&2; exit 2 ;;
esac

mapfile -t cpp < <(git ls-files 'custom_ops/*.h' 'custom_ops/*.cc' 'custom_ops/*.cu' 'custom_ops/*.xpu' 'bench/*.cc')

if [ "$mode" = check ]; then
  status=0
  "${ruff[@]}" check --select I --output-format concise --quiet . || status=1
  "${ruff[@]}" format --check --quiet . || status=1
  "$clang_format" --dry-run --Werror "${cpp[@]}" || status=1
  exit $status
fi
"${ruff[@]}" check --select I --fix --quiet .
"${ruff[@]}" format --quiet .
"$clang_format" -i "${cpp[@]}"
