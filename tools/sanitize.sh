#!/usr/bin/env bash
# Build dnnq with AddressSanitizer + UndefinedBehaviorSanitizer and run the tests under them.
#
#   tools/sanitize.sh                         # the whole suite
#   tools/sanitize.sh tests/test_pooling.py   # any pytest arguments: a file, -k EXPR, ...
#   DNNQ_FUZZ_EXAMPLES=2000 tools/sanitize.sh tests/test_fuzz.py
#
# What it does (see docs/testing.md):
#  * a separate virtual environment (default ~/.cache/dnnq/sanitize-venv, or $DNNQ_SANITIZE_VENV) with
#    the build and test dependencies, so the normal development install is left alone;
#  * a regular (non-editable) install of this checkout built with meson's
#    b_sanitize=address,undefined (and b_lundef=false, which sanitizers need for Python
#    extension modules) in its own build directory (build/sanitize);
#  * pytest run from the checkout with libasan and libubsan preloaded (the Python interpreter
#    itself is not instrumented, so the runtime must be loaded first), Python's small-object
#    allocator off (PYTHONMALLOC=malloc, so ASan sees Python's allocations), leak detection off
#    (CPython keeps objects alive at exit on purpose), and any UBSan report fatal.
# Exit status: pytest's; a sanitizer report aborts the run with the report on stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# outside the checkout: meson refuses include directories (numpy's) inside the source tree
VENV="${DNNQ_SANITIZE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dnnq/sanitize-venv}"
BUILD_DIR="$ROOT/build/sanitize"
PYTHON="${PYTHON:-python3}"
CC="${CC:-gcc}"

if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q meson-python meson Cython ninja numpy pytest hypothesis \
    threadpoolctl "onednn-cpu-gomp==2023.2.0" "onednn-devel-cpu-gomp==2023.2.0"
fi

# Rebuilt incrementally in BUILD_DIR; installed as a plain wheel (no editable loader that
# would rebuild at import time under LD_PRELOAD).
"$VENV/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall \
  -Cbuild-dir="$BUILD_DIR" \
  -Csetup-args=-Db_sanitize=address,undefined \
  -Csetup-args=-Db_lundef=false \
  -Csetup-args=-Dbuildtype=debugoptimized \
  "$ROOT"

LIBASAN="$("$CC" -print-file-name=libasan.so)"
LIBUBSAN="$("$CC" -print-file-name=libubsan.so)"
for lib in "$LIBASAN" "$LIBUBSAN"; do
  if [ ! -e "$lib" ]; then
    echo "sanitize.sh: $CC has no $(basename "$lib") (install the compiler's sanitizer runtime)" >&2
    exit 2
  fi
done

cd "$ROOT"
export LD_PRELOAD="$LIBASAN $LIBUBSAN"
export PYTHONMALLOC=malloc
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:detect_odr_violation=0:abort_on_error=1:print_summary=1:allocator_may_return_null=1:handle_segv=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
# -P: never import the uncompiled dnnq/ of the checkout; -p no:cacheprovider: no .pytest_cache
exec "$VENV/bin/python" -P -m pytest -q -p no:cacheprovider "${@:-tests}"
