#!/usr/bin/env bash
# session 18 GPU run 5: SELL conversion on the device; large suite for the docs
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1 SPGPU_MATRICES=$PWD/.gpu/matrices
B=.gpu/bin/spgpu
{
timeout 240 bash .gpu/run.sh tests 2>&1 | grep -E "^=== |test result|FAILED|panicked|failed|assert"
t=$(ls .gpu/tests/device_conversion-*)
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $t --test-threads=1 2>&1 | tail -3
echo "memcheck rc=${PIPESTATUS[0]}"
} > $OUT/log.txt 2>&1
G="--gen circuit:3000000 --gen stencil27:100 --gen geo:4000000 --gen elast:65 --gen uniform:2000000:2000000:16"
for round in 1 2; do
  SPGPU_DEVICE_CONVERSION=0 timeout 100 $B bench --no-cpu --no-cusparse --precision both --kernels auto $G --csv $OUT/host$round.csv > /dev/null 2>&1; echo "host $round rc=$?" >> $OUT/log.txt
  timeout 100 $B bench --no-cpu --no-cusparse --precision both --kernels auto $G --csv $OUT/device$round.csv > /dev/null 2>&1; echo "device $round rc=$?" >> $OUT/log.txt
done
timeout 150 $B bench --no-cpu --precision both --kernels auto --suite large --csv $OUT/large.csv > /dev/null 2>&1; echo "large rc=$?" >> $OUT/log.txt
