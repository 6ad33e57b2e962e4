# bench with patches 0001-0026 on the H200: head_dim 64 at T2048 (B8).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT ${LIMIT:-240} python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens 2048 --head-dims 64 --out $OUT/bench-t2048-d64 > $OUT/bench-t2048-d64.log 2>&1
tar czf $OUT/bench.tgz -C $OUT bench-t2048-d64 2>/dev/null; rm -rf $OUT/bench-t2048-d64
cat $OUT/gpu.txt $OUT/rc.txt
grep -A7 "^| shape" $OUT/bench-t2048-d64.log | grep -v "^$" | head -8
