# The Gemma-2 example at GPU size, then bench at head_dim 256, T4096 and
# T16384, patches 0001-0026, H200.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt
python3 -c "import jax, jaxlib, triton; print(jax.__version__, jaxlib.__version__, triton.__version__)" >> $OUT/gpu.txt 2>&1
sha256sum tokamax_softcap/patches/*.patch > $OUT/series.sha256
t() { local s=$(date +%s); "$@"; local rc=$?; echo "$(( $(date +%s) - s ))s rc $rc: $*" >> $OUT/rc.txt; }
t timeout -s INT 130 python3 examples/gemma2_attention.py --steps 10 > $OUT/example.log 2>&1
for T in 4096 16384; do
  lim=$([ $T = 4096 ] && echo 170 || echo 260)
  t timeout -s INT $lim python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens $T --head-dims 256 --out $OUT/bench-$T > $OUT/bench-$T.log 2>&1
done
tar czf $OUT/bench.tgz -C $OUT bench-4096 bench-16384 2>/dev/null; rm -rf $OUT/bench-4096 $OUT/bench-16384
cat $OUT/gpu.txt $OUT/rc.txt; grep -v "it/s\|s/it" $OUT/example.log | tail -20
for T in 4096 16384; do grep -A30 "^| shape" $OUT/bench-$T.log | head -40; done
