# Usage: OUT=DIR bash run-bench.sh T LIMIT_S, from the repository root, with
# the wheels of tokamax 0.0.17 and its dependencies in .whl/. Run as
# `run-bench.sh 4096 530` (bench-4k/) and `run-bench.sh 8192 480` (bench-8k/).
T=$1; LIMIT_S=$2; NAME=bench-$((T / 1024))k
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt; git log --oneline -1 > $OUT/commit.txt
s=$(date +%s); timeout -s INT $LIMIT_S python3 -m tokamax_softcap bench --impls ours,ours-nocap,mosaic,xla --seq-lens $T --out /tmp/$NAME > /tmp/$NAME.log 2>&1; echo "rc $? $(( $(date +%s) - s ))s" >> $OUT/rc.txt
cp /tmp/$NAME.log /tmp/$NAME/ 2>/dev/null; tar czf $OUT/$NAME.tgz -C /tmp $NAME
cat $OUT/rc.txt; cat /tmp/$NAME/bench.md; tail -5 /tmp/$NAME.log
