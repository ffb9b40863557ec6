#!/bin/bash
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1 SPGPU_MATRICES=$PWD/.gpu/matrices
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
SECONDS=0
bash .gpu/run.sh tests > $OUT/tests.log 2>&1; echo "tests rc=$? ${SECONDS}s"
grep -E "^=== |test result|FAILED|panicked" $OUT/tests.log | head -40
SPGPU_NARROW_COLUMNS=0 .gpu/tests/gpu_spmv-* vector_kernel_on short_even long_narrow 2>&1 | grep -E "test result|panicked|FAILED"
compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/tests/gpu_spmv-* --test-threads=1 vector_kernel_on long_narrow > $OUT/memcheck.log 2>&1; echo "memcheck rc=$? ${SECONDS}s"; grep -E "ERROR SUMMARY|test result" $OUT/memcheck.log
G="--gen uniform:3000:20000:2500:4 --gen uniform:4000:30000:2000 --gen uniform:2500:6000000:5000 --gen uniform:2000:8000000:4000 --gen uniform:1500:15000:4000 --gen uniform:3500:25000:2200:9"
.gpu/bin/spgpu bench --no-cpu --precision both --kernels auto,balanced,vector:16,vector:32 $G --csv $OUT/fewrows-new.csv > /dev/null 2>&1; echo "fewrows new rc=$? ${SECONDS}s"
.gpu/bin/spgpu-old bench --no-cpu --no-cusparse --precision both --kernels auto,balanced,vector:16,vector:32 $G --csv $OUT/fewrows-old.csv > /dev/null 2>&1; echo "fewrows old rc=$? ${SECONDS}s"
