# The VJP's shared memory where v's head dim is smaller than q's (sm90,
# causal, B1 T2048 H8/4, bf16), against the bound; from the repository root:
#   TRITON_PYTHON=/tmp/tv/bin/python bash results/cpu-2026-12-03-smem-vjp/head-dims.sh
P=results/cpu-2026-12-01-compile-probe/dump_ttir.py
S=results/cpu-2026-12-02-smem-bound/shared.py
mkdir -p /tmp/head-dims
one() {  # D DV block_m1 block_n1 warps stages
  local o=/tmp/head-dims/d$1-dv$2-$3x$4w$5s$6
  DV=$2 .venv/bin/python -P $P $o 1,2048,8,4,$1 bfloat16 default \
    "{\"block_m1\":$3,\"block_n1\":$4,\"block_m2\":$4,\"block_n2\":$3,\"num_warps\":$5,\"num_stages\":$6}" \
    '{"block_q":32,"block_k":32,"num_warps":4,"num_stages":1}' > $o.log 2>&1
  $TRITON_PYTHON $S $o | grep vjp | sed "s/^/d$1 dv$2 $3x$4 w$5 s$6 /"
}
one 256 64 16 128 8 2
one 256 128 16 128 8 2
one 512 64 16 64 8 1
