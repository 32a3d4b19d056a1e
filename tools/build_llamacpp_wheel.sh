#!/usr/bin/env bash
# Builds llama-cpp-python from its sdist ONCE, in the exact (batch-invariant) configuration of
# issue 39, and caches the wheel outside the clone so that a fresh clone reuses it.
#
#   tools/build_llamacpp_wheel.sh PYTHON     build the wheel unless cached; print its folder
#   tools/build_llamacpp_wheel.sh --dir      print the cache folder only (builds nothing)
#
# The folder is keyed by the version, the CMake flags, the patch and the CPU (the build uses
# -march=native), so a change to any of them builds a new wheel beside the old one.
# EDGESPEC_WHEEL_CACHE overrides the cache root (default ~/.cache/edgespec/wheels).
# EDGESPEC_LLAMACPP_CMAKE adds CMake flags, e.g. -DGGML_CUDA=ON on a machine with the CUDA
# toolkit (a GPU build: serve with --llamacpp-gpu-layers; the load-time self-check then judges
# the GPU's kernels); they are part of the key, so such a wheel sits beside the CPU one.
#
# The configuration:
#   -DGGML_LLAMAFILE=OFF   no llamafile sgemm: its kernels tile by batch size (not batch-invariant)
#   -DLLAVA_BUILD=OFF      no multimodal library (unused here)
#   -DLLAMA_OPENSSL=OFF    no HTTPS for llama.cpp's downloader (unused here)
#   patch: LLAMA_BUILD_COMMON OFF   no common library, hence no HTTP server or tools; the
#                                   Python bindings load only libllama and libggml*.
set -euo pipefail

VERSION=0.3.36
CMAKE_FLAGS="-DGGML_LLAMAFILE=OFF -DLLAVA_BUILD=OFF -DLLAMA_OPENSSL=OFF${EDGESPEC_LLAMACPP_CMAKE:+ $EDGESPEC_LLAMACPP_CMAKE}"
PATCH_ID="common-off-1"

cpu_id() {
  # The ISA flags -march=native sees; a wheel built for one CPU may not run on another.
  { uname -m; grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true; } | sha256sum | cut -c1-12
}

cache_dir() {
  local root="${EDGESPEC_WHEEL_CACHE:-$HOME/.cache/edgespec/wheels}"
  local key
  key=$(printf '%s|%s|%s|%s' "$VERSION" "$CMAKE_FLAGS" "$PATCH_ID" "$(cpu_id)" \
    | sha256sum | cut -c1-12)
  printf '%s/llama-cpp-python-%s-%s\n' "$root" "$VERSION" "$key"
}

if [[ $# -ne 1 ]]; then
  echo "usage: $0 PYTHON | --dir" >&2
  exit 2
fi
DIR=$(cache_dir)
if [[ "$1" == "--dir" ]]; then
  echo "$DIR"
  exit 0
fi
PY="$1"

if compgen -G "$DIR/llama_cpp_python-$VERSION-*.whl" >/dev/null; then
  echo "$DIR"
  exit 0
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "building llama-cpp-python $VERSION ($CMAKE_FLAGS, $PATCH_ID) into $DIR;" \
  "takes about 2 minutes on 2 cores" >&2
"$PY" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar -xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION"
# The bindings' CMakeLists forces the common library on; it is what pulls in the HTTP server
# and the tools. Turn it off, and fail loudly if the line moved in another version.
LINE='set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)'
if ! grep -qF "$LINE" "$SRC/CMakeLists.txt"; then
  echo "error: $SRC/CMakeLists.txt no longer forces LLAMA_BUILD_COMMON; update the patch" >&2
  exit 1
fi
sed -i 's/set(LLAMA_BUILD_COMMON ON CACHE BOOL/set(LLAMA_BUILD_COMMON OFF CACHE BOOL/' \
  "$SRC/CMakeLists.txt"

mkdir -p "$WORK/out"
if ! CMAKE_ARGS="$CMAKE_FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  "$PY" -m pip wheel -q --no-deps -w "$WORK/out" "$SRC" >&2; then
  echo "error: building llama-cpp-python $VERSION failed (needs cmake>=3.21, gcc/g++);" \
    "the llamacpp backend is unavailable until it builds" >&2
  exit 1
fi
mkdir -p "$DIR"
# copied beside its place under a hidden name, then renamed: a wheel under its own name is
# whole (a plain mv from another file system, a tmpfs $TMPDIR, copies; a make stopped during
# the copy left a cut wheel that the check above took for a build, and pip refused it).
for WHEEL in "$WORK"/out/llama_cpp_python-"$VERSION"-*.whl; do
  PART="$DIR/.$(basename "$WHEEL").part$$"
  cp "$WHEEL" "$PART"
  mv -f "$PART" "$DIR/$(basename "$WHEEL")"
done
echo "$DIR"
