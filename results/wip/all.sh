# H200, one call, after `git revert 963a9ef` (patch 0040 back in the series):
# the default op with and without patch 0040 (hd128 MHA, B2 T8192, cap 50)
# and cuDNN without a cap; the GPU tests of the one-pass VJP (0038-0040 at
# t = 1000 and 1024); the forward config sweep in what is left.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import jax, triton; print('jax', jax.__version__, 'triton', triton.__version__)"
git log --oneline -1
q() { grep -v "^WARNING\|cache miss"; }
B="python3 -m tokamax_softcap bench --seq-lens 8192 --heads ${HEADS:-mha} --head-dims ${HD:-128} --masks causal,window-4096,docs-4"
mkdir -p /tmp/held && mv tokamax_softcap/patches/0040-* /tmp/held/
timeout -s INT 150 $B --impls default --out $OUT/base 2>&1 | q | tail -6
mv /tmp/held/* tokamax_softcap/patches/
timeout -s INT 170 $B --impls default,cudnn-nocap --out $OUT/p40 2>&1 | q | tail -10
timeout ${TEST_SECONDS:-170} python3 -m pytest tests/test_mosaic_gpu.py -q -s -p no:cacheprovider \
  -k "${TESTS:-fused_vjp_gradients or default_chain_gradients}" 2>&1 | q | tee $OUT/tests.log | tail -14
SWEEP_SECONDS=${SWEEP:-60} timeout 90 python3 results/wip/fwd_sweep.py "${SWEEP_SHAPES:-H16/16 D128 causal}" 2>&1 | q | tail -30
