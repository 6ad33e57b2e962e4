# bench with patches 0001-0026 on the H200: the shapes run A's time limits
# cut off (head_dim 256 at T2048, 128 at T16384 with GQA) and head_dim 256 at
# T8192.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
b() { t timeout -s INT $1 python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens $2 --head-dims $3 --heads $4 --out $OUT/bench-$5 > $OUT/bench-$5.log 2>&1; }
b 100 2048 256 mha,gqa t2048-d256
b 110 16384 128 gqa t16384-d128-gqa
b 180 8192 256 mha,gqa t8192-d256
tar czf $OUT/bench.tgz -C $OUT bench-t2048-d256 bench-t16384-d128-gqa bench-t8192-d256 2>/dev/null
rm -rf $OUT/bench-t2048-d256 $OUT/bench-t16384-d128-gqa $OUT/bench-t8192-d256
cat $OUT/gpu.txt $OUT/rc.txt
for f in $OUT/bench-*.log; do grep -A7 "^| shape" $f | grep -v "^$" | head -8; done
