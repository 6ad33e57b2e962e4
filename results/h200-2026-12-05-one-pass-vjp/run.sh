# On the H200, from the repository root: installs the carried wheels, then
# runs spike.py with ptxas's resource usage of each Mosaic GPU kernel dumped.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd results/h200-2026-12-05-one-pass-vjp || exit
mkdir -p "$OUT/dump"
MOSAIC_GPU_DUMP_PTXAS=1 MOSAIC_GPU_DUMP_TO="$OUT/dump" timeout 560 python3 spike.py 2>&1 | tee "$OUT/spike.log" | grep -v "^ptxas\|^$" | tail -60
ls "$OUT/dump" | head -30
grep -h -E "Compiling|registers|spill" "$OUT"/dump/* 2>/dev/null | head -60
