#!/usr/bin/env bash
# Assembles every committed ptx/*.ptx for Hopper (sm_90), and each for the oldest GPU that
# loads it (ptx/<stem>.ptx for sm_70, ptx/<stem>.sm80.ptx for sm_80), with ptxas and fails
# on any error, so PTX that the driver would refuse to JIT never gets merged.
#
#   .ci/check-ptx.sh            # from the crate root or anywhere
#
# ptxas comes from $PTXAS, the PATH (Debian's nvidia-cuda-toolkit installs /usr/bin/ptxas),
# or, when neither has it, the PyPI wheel nvidia-cuda-nvcc-cu12 installed into
# ${PTXAS_CACHE:-$HOME/.cache/spgpu-ptxas} (about 40 MB, once).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${PTXAS_ARCH:-sm_90}

ptxas=${PTXAS:-}
if [ -z "$ptxas" ]; then
  ptxas=$(command -v ptxas || true)
  # bash's command -v falls back to a file that is not executable: ignore one.
  [ -x "$ptxas" ] || ptxas=""
fi
if [ -z "$ptxas" ]; then
  dir=${PTXAS_CACHE:-$HOME/.cache/spgpu-ptxas}
  ptxas=$dir/nvidia/cuda_nvcc/bin/ptxas
  if [ ! -x "$ptxas" ]; then
    echo "check-ptx: ptxas not found; installing the nvidia-cuda-nvcc-cu12 wheel into $dir" >&2
    python3 -m pip install --quiet --target "$dir" nvidia-cuda-nvcc-cu12
  fi
fi
[ -x "$ptxas" ] || { echo "check-ptx: no usable ptxas at $ptxas" >&2; exit 1; }
echo "check-ptx: $("$ptxas" --version | tail -1)" >&2

status=0
shopt -s nullglob
files=(ptx/*.ptx)
[ ${#files[@]} -gt 0 ] || { echo "check-ptx: no ptx/*.ptx to check" >&2; exit 1; }
for f in "${files[@]}"; do
  case "$f" in
    *.sm80.ptx) oldest=sm_80 ;;
    *) oldest=sm_70 ;;
  esac
  for a in "$arch" "$oldest"; do
    if "$ptxas" -arch="$a" -o /dev/null "$f"; then
      echo "check-ptx: $f assembles for $a"
    else
      echo "check-ptx: $f FAILED to assemble for $a" >&2
      status=1
    fi
  done
done
exit $status
