"""Shared memory of the VJP's kernels over a grid of configs, on a CPU.

Usage, from the repository root (TRITON_PYTHON: a Python with triton==3.6.0):
  python results/cpu-2026-12-03-smem-vjp/grid.py OUTDIR TRITON_PYTHON [JOBS] [extra]
Each point lowers forward + VJP (B1 T2048 H8/4, soft cap 50; the forward at
32x32 blocks, 4 warps, one stage) for sm90 with
`../cpu-2026-12-01-compile-probe/dump_ttir.py` and compiles each VJP kernel's
Triton IR with `../cpu-2026-12-02-smem-bound/shared.py`; writes
OUTDIR/grid.jsonl, one line per kernel: the point and its shared memory.
"""
import concurrent.futures, itertools, json, os, pathlib, subprocess, sys

HERE = pathlib.Path(__file__).parent
DUMP = HERE.parent / "cpu-2026-12-01-compile-probe" / "dump_ttir.py"
SHARED = HERE.parent / "cpu-2026-12-02-smem-bound" / "shared.py"
FWD = json.dumps(dict(block_q=32, block_k=32, num_warps=4, num_stages=1))
# (block_m1 = block_n2, block_n1 = block_m2, warps, stages): loaded tiles of
# 16 to 64 rows, dots of 32 to 128 rows.
VJP = [(r, h, w, s) for r, h in ((16, 32), (16, 64), (16, 128), (32, 32),
                                 (32, 64), (32, 128), (64, 64), (64, 128))
       for w in (4, 8) for s in (1, 2, 3)]
POINTS = ([(d, "1", "90", v) for d in (64, 128, 256, 512) for v in VJP]
          + [(256, "0", "90", v) for v in VJP]
          + [(256, "1", "80", v) for v in VJP])
# Four stages, run apart (`extra` as the last argument; grid-extra.jsonl):
# the H200 asked for 264,960 bytes at head_dim 512 with 32x32 blocks.
EXTRA = [(d, "1", sm, (r, h, 4, 4)) for d in (256, 512) for sm in ("90", "80")
         for r, h in ((16, 32), (32, 32), (32, 64))]


def point(out, triton_python, d, causal, sm, vjp):
  r, h, w, s = vjp
  tag = f"d{d}-c{causal}-sm{sm}-{r}x{h}w{w}s{s}"
  o = out / tag
  env = {**os.environ, "CAUSAL": causal, "SM": sm}
  config = json.dumps(dict(block_m1=r, block_n1=h, block_m2=h, block_n2=r,
                           num_warps=w, num_stages=s))
  p = subprocess.run([sys.executable, "-P", str(DUMP), str(o),
                      f"1,2048,8,4,{d}", "bfloat16", "default", config, FWD],
                     env=env, capture_output=True, text=True)
  base = dict(head_dim=d, causal=causal == "1", sm=int(sm), vjp=[r, h, h, r, w, s])
  if p.returncode:
    return [base | dict(error=p.stderr.strip().splitlines()[-1][:300])]
  p = subprocess.run([triton_python, str(SHARED), str(o)], env=env,
                     capture_output=True, text=True)
  rows = [json.loads(line) for line in p.stdout.splitlines()]
  return [base | row for row in rows if "vjp" in row["kernel"]] or [
      base | dict(error=p.stderr[-300:])]


def main():
  out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
  triton_python, jobs = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2
  extra = sys.argv[4:] == ["extra"]
  points, name = (EXTRA, "grid-extra") if extra else (POINTS, "grid")
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool, \
       open(out / f"{name}.jsonl", "w") as f:
    for rows in pool.map(lambda p: point(out, triton_python, *p), points):
      for row in rows:
        f.write(json.dumps(row) + "\n"); f.flush()


main()
