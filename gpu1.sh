export CARGO_MANIFEST_DIR=$PWD SPGPU_REQUIRE_GPU=1
mkdir -p $OUT
for s in large validate check; do
  .gpu/bin/spgpu bench --no-cpu --precision both --kernels auto --suite $s --csv $OUT/$s.csv 2>&1 | grep -E "memory-bound" | sed "s/^/$s: /"
done
