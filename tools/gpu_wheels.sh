#!/usr/bin/env bash
# Wheels that tools/gpu_check.sh needs on a lent CUDA machine beside its image's packages:
# the versions constraints.txt pins of the packages whose version the code depends on
# (the generated gRPC code checks grpcio's and protobuf's versions at import; the exact
# numerics hook into transformers), for that machine's CPython 3.12 on x86-64 Linux. The
# machine reaches no package registry, so the wheels travel with the working tree:
#
#   tools/gpu_wheels.sh            # download them into .whl/ (git-ignored via .git/info/exclude)
#   tools/gpu_wheels.sh --list     # print the pinned requirements only
#
# then, on the device machine: GPU_WHEELS=.whl PYTHON=python3 tools/gpu_check.sh
# (the device tool's run with carry [".whl"]; docs/PROFILE.md, On a CUDA machine).
set -eu

PACKAGES="grpcio protobuf transformers"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${WHEEL_DIR:-$ROOT/.whl}"

pins=()
for name in $PACKAGES; do
  pin="$(grep -i -E "^${name}==" "$ROOT/constraints.txt" || true)"
  if [ -z "$pin" ]; then
    echo "gpu_wheels: $name is not pinned in constraints.txt" >&2
    exit 2
  fi
  pins+=("$pin")
done

case "${1:-}" in
  --list) printf '%s\n' "${pins[@]}"; exit 0 ;;
  "") ;;
  *) echo "usage: tools/gpu_wheels.sh [--list]" >&2; exit 2 ;;
esac

mkdir -p "$DEST"
"${PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$DEST" "${pins[@]}"
ls -1 "$DEST"
