#!/usr/bin/env bash
# session 20 GPU run 14: rule 2 with 4 threads per row and rows of 48+ entries: held-out check
export CARGO_MANIFEST_DIR=$PWD
B=.gpu/bin/spgpu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/log.txt
g() { local G=""; for s in "$@"; do G="$G --gen $s"; done; echo $G; }
S=$(g uniform:40000:40000:50:3 uniform:55000:55000:80:4 uniform:45000:200000:100:5 banded:50000:30 elast:25 uniform:60000:60000:48:6 uniform:45000:45000:40:7 stencil27:38)
timeout 200 $B bench --no-cpu --precision both --kernels auto,ell,sell,balanced,vector:4 $S --csv $OUT/small4.csv > /dev/null 2>&1; echo "rc=$?" >> $OUT/log.txt
