#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD XLA_PYTHON_CLIENT_PREALLOCATE=false || exit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)"
for v in base wA wB wC; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r tokamax_softcap /tmp/$v/; done
rm /tmp/base/tokamax_softcap/patches/003[789]-*
rm /tmp/wA/tokamax_softcap/patches/003[89]-*
rm /tmp/wB/tokamax_softcap/patches/0039-*
for v in base wA wB; do cp results/wip/pmg_orig.py /tmp/$v/tokamax_softcap/pallas_mosaic_gpu.py; done
run(){ (cd /tmp/$1 && PYTHONPATH=/tmp/site:/tmp/$1 timeout -s INT -k 20 $2 python3 -m tokamax_softcap bench --seq-lens 8192 --masks $3 --impls $4 --head-dims 128 --heads mha --out $OUT/$1-128) > $OUT/$1.log 2>&1; echo "== $1 rc=$?"; grep '|' $OUT/$1-128/bench.md; }
run wC 90 window-4096 default
run wA 130 causal,window-4096,docs-4 default
run wB 160 causal,window-4096,docs-4 default,cudnn-nocap
run base 130 causal,window-4096,docs-4 default
