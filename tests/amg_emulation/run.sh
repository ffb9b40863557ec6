#!/usr/bin/env bash
# Runs the AMG setup kernels of ptx/amg.cu on the CPU and compares them with the host setup
# (src/solver/amg/host_setup.rs), without a GPU.
#
#   tests/amg_emulation/run.sh            # from anywhere; needs g++ 11 or newer
#
# common.cuh stands in for the CUDA built-ins: each launch runs every thread of its grid,
# in a shuffled order for the per-row kernels (driver.cpp: grids of up to 3 blocks of 256
# threads, so the grid-stride loops, the integer atomics and the re-sorting of the transpose
# are exercised), and block by block with 256 real threads, a barrier for __syncthreads and
# shuffles through a shared array for the scan (scan.cpp). The host's results come from the
# ignored test device_setup::tests::dump_host_results (matrices lap2d, lap3d, geo, two graph
# Laplacians and elast with block size 3, theta 0, 0.08 and 0.25); every device output must
# equal them byte for byte (values as their bits).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${AMG_EMULATION_DIR:-$(mktemp -d)}
mkdir -p "$work/dump"
cp "$here/common.cuh" "$work/"
cp "$root/ptx/amg.cu" "$work/amg.cu"
(cd "$root" && AMG_DUMP="$work/dump" cargo test --lib dump_host_results -- --ignored --quiet)
g++ -O1 -std=c++20 -ffp-contract=off -w -pthread -include cstring -o "$work/scan" "$here/scan.cpp" -I"$work"
g++ -O1 -std=c++20 -ffp-contract=off -w -pthread -include cstring -o "$work/driver" "$here/driver.cpp" -I"$work"
"$work/scan"
status=0
for f in "$work"/dump/*.in; do
  b=${f%.in}
  "$work/driver" "$f" "$b.dev"
  if cmp -s "$b.dev" "$b.host"; then
    echo "amg emulation: $(basename "$b") equals the host"
  else
    echo "amg emulation: $(basename "$b") DIFFERS from the host" >&2
    status=1
  fi
done
exit $status
