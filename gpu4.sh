#!/usr/bin/env bash
# session 18 GPU run 4: ELL conversion on the device
export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1 SPGPU_MATRICES=$PWD/.gpu/matrices
B=.gpu/bin/spgpu
{
timeout 240 bash .gpu/run.sh tests 2>&1 | grep -E "^=== |test result|FAILED|panicked|failed|assert"
t=$(ls .gpu/tests/ell_conversion-*)
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 $t --test-threads=1 2>&1 | tail -3
echo "memcheck rc=${PIPESTATUS[0]}"
} > $OUT/log.txt 2>&1
G="--gen lap2d:2000 --gen lap3d:150 --gen lap2d:3000"
for round in 1 2; do
  SPGPU_DEVICE_CONVERSION=0 timeout 100 $B bench --no-cpu --no-cusparse --precision both --kernels auto $G --csv $OUT/host$round.csv > /dev/null 2>&1; echo "host $round rc=$?" >> $OUT/log.txt
  timeout 100 $B bench --no-cpu --no-cusparse --precision both --kernels auto $G --csv $OUT/device$round.csv > /dev/null 2>&1; echo "device $round rc=$?" >> $OUT/log.txt
done
{
for s in 0 1; do
  echo "--- SPGPU_DEVICE_CONVERSION=$s"
  SPGPU_DEVICE_CONVERSION=$s $B cg gen:lap2d:2000 2>&1 | grep -E "device|stop|per iteration|times"
done
} > $OUT/cg.txt 2>&1
