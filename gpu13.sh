#!/usr/bin/env bash
# session 20 GPU run 13: final build: every GPU test, sanitizers, large, stress and SuiteSparse
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1 SPGPU_MATRICES=$PWD/.gpu/matrices
B=.gpu/bin/spgpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/log.txt
{
timeout 240 bash .gpu/run.sh tests 2>&1 | grep -E "^=== |test result|FAILED|panicked|failed|assert"
g=$(ls .gpu/tests/gpu_spmv-*)
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $g --test-threads=1 2>&1 | tail -3; echo "memcheck gpu_spmv rc=${PIPESTATUS[0]}"
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 3 $g --test-threads=1 few_long_rows_run_balanced balanced_and_sell_on_small_matrices 2>&1 | tail -2; echo "racecheck rc=${PIPESTATUS[0]}"
} >> $OUT/log.txt 2>&1
unset SPGPU_REQUIRE_GPU
for s in large stress; do
  timeout 150 $B bench --no-cpu --precision both --kernels auto --suite $s --csv $OUT/$s.csv > $OUT/$s.txt 2>&1; echo "$s rc=$?" >> $OUT/log.txt
done
timeout 150 $B bench --no-cpu --precision both .gpu/matrices --csv $OUT/suitesparse.csv > $OUT/ss.txt 2>&1; echo "suitesparse rc=$?" >> $OUT/log.txt
grep -A4 "^group" $OUT/large.txt $OUT/stress.txt $OUT/ss.txt >> $OUT/log.txt
rm -f $OUT/ss.txt
