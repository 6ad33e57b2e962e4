# bench with patches 0001-0026 on the H200: the sweep's shapes not yet timed
# with the final kernels of their head_dim (head_dim 128 at T2048, 64 and 128
# at T16384, 256 at T1024, T2048 and T8192).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
b() { t timeout -s INT $1 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens $2 --head-dims $3 --out $OUT/bench-$4 > $OUT/bench-$4.log 2>&1; }
b 150 1024,2048,8192 256 d256
b 100 2048 128 t2048-d128
b 230 16384 64,128 t16384
tar czf $OUT/bench.tgz -C $OUT bench-d256 bench-t2048-d128 bench-t16384 2>/dev/null
rm -rf $OUT/bench-d256 $OUT/bench-t2048-d128 $OUT/bench-t16384
cat $OUT/gpu.txt $OUT/rc.txt
for f in $OUT/bench-*.log; do grep -A40 "^| shape" $f | grep -v "^$" | head -60; done
