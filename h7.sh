#!/bin/bash
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1 SPGPU_COMMIT=COMMIT_HERE
name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); echo "$name"
SECONDS=0
S=.gpu/bin/spgpu
for t in .gpu/tests/*; do echo "=== $(basename $t)"; timeout 200 $t 2>&1 | grep -E "^test result|FAILED|panicked" | head -5; done
echo "tests ${SECONDS}s"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/tests/gpu_spmv-* --test-threads=1 hot_columns_f32 offsets_past_2_to_the_32_f32 balanced_and_sell chunk_major 2>&1 | grep -E "ERROR SUMMARY|test result"
timeout 150 compute-sanitizer --tool racecheck .gpu/tests/gpu_spmv-* --test-threads=1 hot_columns_f32 balanced_and_sell 2>&1 | grep -E "RACECHECK SUMMARY|test result"
echo "sanitizers ${SECONDS}s"
mkdir -p /tmp/o
case "$name" in *H200*) ;; *) echo "not an H200: no suites"; tar czf $OUT/o.tgz -C /tmp o; exit 0;; esac
for s in large stress validate check shapes; do
  [ $SECONDS -gt 520 ] && break
  timeout $((585-SECONDS)) $S bench --no-cpu --precision both --kernels auto --suite $s --csv /tmp/o/$s.csv > /tmp/o/$s.log 2>&1; echo "$s rc=$? ${SECONDS}s"
done
tar czf $OUT/o.tgz -C /tmp o
