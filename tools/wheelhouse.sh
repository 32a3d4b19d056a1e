#!/usr/bin/env bash
# Downloads every wheel of the development environment ONCE per set of pins and caches them
# outside the clone, so that `make` on a fresh clone installs from that folder alone
# (--no-index): pip spent most of an install against the index resolving, reading every
# file of every release of each package; from a folder holding one wheel of each it reads
# only those.
#
#   tools/wheelhouse.sh PYTHON LLAMACPP_WHEELS   download the wheels unless cached; print the folder
#
# The folder is keyed by constraints.txt, pyproject.toml, the llama-cpp-python wheel's folder
# (tools/build_llamacpp_wheel.sh) and PYTHON's version and machine, so a change to any of
# them downloads a new set beside the old one. It holds torch 2.13.0 (the CPU build pip finds
# on this machine's disk), the project's dependencies as constraints.txt pins them, uv (the
# installer) and the build requirements of the editable install (setuptools, wheel). A folder
# is complete or absent: the wheels land in a temporary folder renamed into place once all are
# there.
# EDGESPEC_WHEEL_CACHE overrides the cache root (default ~/.cache/edgespec/wheels).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PYTHON LLAMACPP_WHEELS" >&2
  exit 2
fi
PY="$1"
LLAMACPP="$2"
cd "$(dirname "$0")/.."

ROOT="${EDGESPEC_WHEEL_CACHE:-$HOME/.cache/edgespec/wheels}"
INTERPRETER=$("$PY" -c 'import platform, sys; print(sys.implementation.cache_tag, platform.machine())')
KEY=$(cat constraints.txt pyproject.toml <(printf '%s|%s' "$LLAMACPP" "$INTERPRETER") \
  | sha256sum | cut -c1-12)
DIR="$ROOT/dev-env-$KEY"
if [[ -f "$DIR/complete" ]]; then
  echo "$DIR"
  exit 0
fi

mkdir -p "$ROOT"
WORK=$(mktemp -d "$ROOT/.dev-env-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "downloading the development environment's wheels into $DIR (once per set of pins)" >&2
"$PY" -m pip download -q -d "$WORK" -c constraints.txt --find-links "$LLAMACPP" \
  --only-binary llama-cpp-python torch==2.13.0 "setuptools>=68" wheel uv \
  ".[runtime,learn,dev,llamacpp,data]" >&2
rm -f "$WORK"/edgespec-*  # the project itself is installed editable from the clone
touch "$WORK/complete"
if [[ -e "$DIR" && ! -f "$DIR/complete" ]]; then
  rm -rf "$DIR"  # left by an older copy of this script, or by hand
fi
if ! mv -T "$WORK" "$DIR" 2>/dev/null; then  # another make filled it meanwhile
  [[ -f "$DIR/complete" ]] || { echo "error: cannot create $DIR" >&2; exit 1; }
fi
echo "$DIR"
