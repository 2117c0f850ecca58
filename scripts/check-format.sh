#!/usr/bin/env bash
# C++ / CUDA layout check with clang-format (.clang-format: Google style, 100 columns); CI runs it
# from scripts/test.sh. It checks
#   1. every file listed in .clang-format-files, in full (files formatted once and kept so), and
#   2. every line the current branch changes in a .cpp/.h/.cu/.cuh file against BASE (default: the
#      merge base with `main`, when the repository has a main branch), through git clang-format,
# so files written before .clang-format existed are only held to it where they are edited.
# Usage: scripts/check-format.sh [--fix] [BASE]   (--fix rewrites the files instead of failing)
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
command -v clang-format >/dev/null || { echo "check-format: clang-format not found (scripts/install-deps.sh)"; exit 1; }
status=0

# 1. the listed files, in full
mapfile -t files < <(grep -v '^\s*#' .clang-format-files | sed '/^\s*$/d')
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "check-format: $f is listed in .clang-format-files but does not exist"; status=1; continue; }
  if [ "$fix" = 1 ]; then
    clang-format -i "$f"
  elif ! clang-format --dry-run --Werror "$f" 2>/dev/null; then
    echo "check-format: $f is not clang-formatted (fix: clang-format -i $f)"
    status=1
  fi
done

# 2. the lines this branch changes
base="${1:-}"
if [ -z "$base" ] && git rev-parse -q --verify main >/dev/null 2>&1; then
  base="$(git merge-base HEAD main)"
fi
if [ -n "$base" ] && command -v git-clang-format >/dev/null; then
  if [ "$fix" = 1 ]; then
    git clang-format --quiet "$base" -- '*.cpp' '*.h' '*.cu' '*.cuh' >/dev/null || true
  else
    out="$(git clang-format --diff "$base" -- '*.cpp' '*.h' '*.cu' '*.cuh' 2>&1 || true)"
    if printf '%s\n' "$out" | grep -q '^diff --git'; then
      printf '%s\n' "$out"
      echo "check-format: lines changed since $base are not clang-formatted (fix: scripts/check-format.sh --fix)"
      status=1
    fi
  fi
elif [ -z "$base" ]; then
  echo "check-format: no main branch here: changed lines not checked (listed files were)"
fi
[ "$status" = 0 ] && echo "check-format: ok (${#files[@]} listed files${base:+, lines changed since ${base:0:12}})"
exit "$status"
