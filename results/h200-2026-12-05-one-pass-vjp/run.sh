# On the H200, from the repository root: installs the carried wheels, then
# runs spike.py with ptxas's resource usage of each Mosaic GPU kernel dumped.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd results/h200-2026-12-05-one-pass-vjp || exit
mkdir -p /tmp/dump
MOSAIC_GPU_DUMP_PTXAS=1 MOSAIC_GPU_DUMP_TO=/tmp/dump timeout "${SPIKE_SECONDS:-540}" python3 spike.py "$@" 2>&1 \
  | grep --line-buffered -v "nvdisasm\|Source Location\|dump.cc" | tee "$OUT/spike.log" | grep -v "^ptxas\|^$" | tail -40
# Per kernel: ptxas's registers and spills, and the PTX's instruction counts.
python3 ptx_counts.py /tmp/dump | tee "$OUT/kernels.txt"
