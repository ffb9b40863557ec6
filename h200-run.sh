set -u
name=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$name"
case "$name" in *H200*) ;; *) echo "not an H200: skip"; exit 3;; esac
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
chmod +x .gpu/bin/* .gpu/tests/*
B=.gpu/bin/spgpu
export CARGO_MANIFEST_DIR=$(pwd) SPGPU_REQUIRE_GPU=1
{ for t in .gpu/tests/*; do echo "=== $t"; timeout 120 $t; done; } > $OUT/tests.txt 2>&1; grep "test result" $OUT/tests.txt
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 .gpu/tests/gpu_spmv-* hot --test-threads=1 > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"; grep "ERROR SUMMARY" $OUT/memcheck.txt
for m in graphlap:web:2000000 rmat:24:2; do $B spmv gen:$m 2>&1 | grep "x:"; done; timeout 120 $B bench --no-cpu --precision both --kernels auto --gen graphlap:powerlaw:2000000 --gen graphlap:powerlaw:1000000 --gen graphlap:web:2000000 --gen rmat:24:2 --csv $OUT/vs.csv > $OUT/vs.log 2>&1 || echo "fail vs"
grep -A12 "^Memory-bound" $OUT/vs.log | tail -9 | cut -c1-200
M="--gen graphlap:powerlaw:2000000 --gen graphlap:powerlaw:1500000:11 --gen graphlap:powerlaw:7000000:5 --gen rmat:24:8:3"
for r in 1 2; do for v in rule off; do
  if [ $v = off ]; then export SPGPU_HOT_COLUMNS=0; else unset SPGPU_HOT_COLUMNS; fi
  timeout 100 $B bench --no-cpu --precision both --kernels auto $M --no-cusparse --csv $OUT/ab-$v-r$r.csv > $OUT/ab-$v-r$r.log 2>&1 || echo "fail $v $r"
done; done
for v in rule off; do
  if [ $v = off ]; then export SPGPU_HOT_COLUMNS=0; else unset SPGPU_HOT_COLUMNS; fi
  for m in graphlap:powerlaw:1000000 graphlap:rmat:20:16 graphlap:web:2000000; do echo "== cg $v $m"; timeout 60 $B cg gen:$m --solution random 2>&1 | grep -i "x:\|per iteration\|stop"; done
done > $OUT/cg.txt 2>&1
unset SPGPU_HOT_COLUMNS; grep "== cg\|per iter" $OUT/cg.txt | cut -c1-60
for r in 1 2; do for b in A B; do
  bin=$B; [ $b = A ] && bin=.gpu/bin/spgpu-A
  timeout 60 $bin bench --no-cpu --precision both --kernels auto --gen rmat:24:2 --gen rmat:23:4:3 --no-cusparse --csv $OUT/old-$b-r$r.csv > $OUT/old-$b-r$r.log 2>&1 || echo "fail old $b $r"
done; done
cd $OUT && tar czf all.tgz * && find . -type f ! -name all.tgz -delete
