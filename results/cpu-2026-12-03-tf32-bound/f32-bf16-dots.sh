# Shared memory of f32 inputs with BF16 dots (B1 T2048 H8/4, causal, cap 50),
# compiled by Triton 3.6 on a CPU: `bash f32-bf16-dots.sh TRITON_PYTHON > f32-bf16-dots.txt`
# from the repository root (TRITON_PYTHON: a Python with Triton 3.6, as in
# cpu-2026-12-02-smem-bound). Each line: name, GPU, head_dim, VJP config, forward config.
S=results/cpu-2026-12-02-smem-bound/shared.py
D=results/cpu-2026-12-01-compile-probe/dump_ttir.py
OUT=${OUT:-/tmp/f32-bf16-dots}
one() { SM=$2 .venv/bin/python -P $D $OUT/$1 1,2048,8,4,$3 float32 bf16 "$4" "$5" > $OUT/$1.log 2>&1
  SM=$2 "$TRITON_PYTHON" $S $OUT/$1 | sed "s/^/$1 sm$2 d$3 /"; }
TRITON_PYTHON=$1; mkdir -p $OUT
one a 86 128 '{"block_m1":32,"block_n1":64,"block_m2":64,"block_n2":32,"num_warps":4,"num_stages":2}' '{"block_q":64,"block_k":64,"num_warps":4,"num_stages":2}'
one b 90 128 '{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":4,"num_stages":2}' '{"block_q":64,"block_k":128,"num_warps":4,"num_stages":2}'
one c 90 256 '{"block_m1":64,"block_n1":64,"block_m2":64,"block_n2":64,"num_warps":8,"num_stages":2}' '{"block_q":64,"block_k":64,"num_warps":4,"num_stages":3}'
one d 80 256 '{"block_m1":32,"block_n1":64,"block_m2":64,"block_n2":32,"num_warps":4,"num_stages":3}' '{"block_q":64,"block_k":64,"num_warps":4,"num_stages":2}'
one e 90 128 '{"block_m1":16,"block_n1":64,"block_m2":64,"block_n2":16,"num_warps":4,"num_stages":3}' '{"block_q":32,"block_k":64,"num_warps":4,"num_stages":3}'
