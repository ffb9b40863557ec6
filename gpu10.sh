#!/bin/bash
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1
B=.gpu/bin
for t in .gpu/tests/*; do echo "=== $(basename $t)"; timeout 120 $t 2>&1 | grep -E "^test result|FAILED|panicked" | head -5; done
SPGPU_CHUNK_MAJOR=0 timeout 60 .gpu/tests/gpu_spmv-* few_ 2>&1 | grep -E "^test result|FAILED|panicked"
timeout 400 $B/spgpu bench --no-cpu --precision both --kernels auto --suite stress --csv $OUT/stress.csv 2>&1 | tail -2
