# On the H200, from the repository root: installs the carried wheels, runs
# our tests of the fused VJP (`TESTS`, a pytest -k expression of
# tests/test_mosaic_gpu.py), upstream's (`UPSTREAM`, one of the series'
# tree's pallas_mosaic_gpu_test.py), `determinism.py` (if `DETERMINISM` is
# set), then `bench` with the arguments given.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import jax, triton; print('jax', jax.__version__, 'triton', triton.__version__)"
quiet() { grep -v "^WARNING\|Autotuning cache miss"; }
if [ -n "$TESTS" ]; then
  timeout "${TEST_SECONDS:-300}" python3 -m pytest tests/test_mosaic_gpu.py -q -s \
    -p no:cacheprovider -k "$TESTS" 2>&1 | quiet | tee "$OUT/tests.log" | tail -25
fi
if [ -n "$UPSTREAM" ]; then
  python3 -m tokamax_softcap patch tree /tmp/tk > /dev/null || exit
  F=tokamax/_src/ops/attention/pallas_mosaic_gpu_test.py
  sed -i '/^@pytest.mark.skip(reason="Too slow for OSS regression tests.")$/d' /tmp/tk/$F
  (cd /tmp/tk && PYTHONPATH=/tmp/tk:/tmp/site timeout "${UPSTREAM_SECONDS:-300}" \
    python3 -m pytest $F -q -p no:cacheprovider -W ignore::pytest.PytestUnknownMarkWarning \
    -n 4 -k "$UPSTREAM") 2>&1 | quiet | tee "$OUT/upstream.log" | tail -25
  if [ -n "$BEFORE_LAST" ]; then  # The same, with patch 0032's kernel change undone.
    K=tokamax/_src/ops/attention/pallas_mosaic_gpu_vjp_kernel_sm90.py
    C=$(git -C /tmp/tk log -1 --format=%H --grep="^Index the sm90 dk/dv kernel")
    git -C /tmp/tk show "$C~1:$K" > /tmp/tk/$K || exit
    (cd /tmp/tk && PYTHONPATH=/tmp/tk:/tmp/site timeout 120 \
      python3 -m pytest $F -q -p no:cacheprovider -W ignore::pytest.PytestUnknownMarkWarning \
      -k "$BEFORE_LAST") 2>&1 | quiet | tee "$OUT/before-last.log" | tail -8
  fi
fi
if [ -n "$DETERMINISM" ]; then
  timeout 120 python3 results/h200-2026-12-05-fused-vjp/determinism.py 2>&1 | quiet | tee "$OUT/determinism.log"
fi
if [ $# -gt 0 ]; then
  timeout -s INT -k 60 "${BENCH_SECONDS:-300}" \
    python3 -m tokamax_softcap bench --out "$OUT/bench" "$@" 2>&1 | tail -30
fi
