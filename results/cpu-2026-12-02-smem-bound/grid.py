"""Shared memory of a grid of forward / VJP configs, compiled on a CPU.

Usage, from the repository root:
  python grid.py OUTDIR TRITON_PYTHON [JOBS]
Each point lowers forward + VJP (B1 T1024 H8/4, causal, soft cap 50) with
`dump_ttir.py` (results/cpu-2026-12-01-compile-probe) for the given configs
and compiles their Triton IR with `shared.py`; writes OUTDIR/grid.jsonl,
one line per kernel: the point, the kernel and its shared memory in bytes.
"""
import concurrent.futures, itertools, json, os, pathlib, subprocess, sys

HERE = pathlib.Path(__file__).parent
DUMP = HERE.parent / "cpu-2026-12-01-compile-probe" / "dump_ttir.py"
FWD = [(32, 64, 4, 1), (32, 64, 4, 2), (64, 32, 4, 3), (64, 64, 4, 2),
       (64, 64, 8, 2), (64, 64, 4, 3), (128, 64, 8, 2), (128, 32, 8, 3),
       (64, 128, 4, 2), (32, 32, 4, 4), (16, 32, 4, 2), (128, 128, 8, 1)]
VJP = [(32, 32, 32, 32, 4, 1), (32, 32, 32, 32, 8, 2), (32, 64, 64, 32, 4, 2),
       (64, 64, 64, 64, 8, 2), (64, 64, 64, 64, 4, 3), (16, 32, 32, 16, 4, 2),
       (32, 64, 64, 32, 4, 3), (64, 128, 128, 64, 8, 2), (16, 16, 16, 16, 4, 4),
       (64, 64, 64, 64, 4, 1), (32, 32, 32, 32, 4, 3),
       (128, 128, 128, 128, 8, 2)]
# (name, head dims, dtype, precision, environment): the base grid at three
# head dims, and variants of it at head_dim 256 on the first six pairs.
VARIANTS = [("base", (128, 256, 512), "bfloat16", "default", {}, 12),
            ("f32", (256,), "float32", "default", {}, 6),
            ("bias", (256,), "bfloat16", "default",
             {"BSHAPE": "1,8,1024,1024", "BDT": "float32"}, 6),
            ("full", (256,), "bfloat16", "default", {"CAUSAL": "0"}, 6),
            ("highest", (256,), "bfloat16", "highest", {}, 6),
            ("sm80", (256,), "bfloat16", "default", {"SM": "80"}, 6)]


def point(out, triton_python, name, d, dtype, precision, env, fwd, vjp):
  fq, fk, fw, fs = fwd
  m1, n1, m2, n2, vw, vs = vjp
  tag = f"{name}-d{d}-f{fq}x{fk}w{fw}s{fs}-v{m1}x{n1}x{m2}x{n2}w{vw}s{vs}"
  o = out / tag
  env = {**os.environ, **env}
  vjp_json = json.dumps(dict(block_m1=m1, block_n1=n1, block_m2=m2,
                             block_n2=n2, num_warps=vw, num_stages=vs))
  fwd_json = json.dumps(dict(block_q=fq, block_k=fk, num_warps=fw,
                             num_stages=fs))
  r = subprocess.run([sys.executable, "-P", str(DUMP), str(o),
                      f"1,1024,8,4,{d}", dtype, precision, vjp_json, fwd_json],
                     env=env, capture_output=True, text=True)
  if r.returncode:
    return [dict(tag=tag, error=r.stderr.strip().splitlines()[-1][:300])]
  r = subprocess.run([triton_python, str(HERE / "shared.py"), str(o)],
                     env=env, capture_output=True, text=True)
  rows = [json.loads(line) for line in r.stdout.splitlines()]
  base = dict(variant=name, head_dim=d, dtype=dtype, precision=precision,
              fwd=fwd, vjp=vjp)
  return [base | row for row in rows] or [dict(tag=tag, error=r.stderr[-300:])]


def main():
  out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
  triton_python, jobs = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2
  work = [(name, d, dtype, precision, env, f, v)
          for name, dims, dtype, precision, env, n in VARIANTS
          for d in dims for f, v in itertools.islice(zip(FWD, VJP), n)]
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool, \
       open(out / "grid.jsonl", "w") as f:
    for rows in pool.map(lambda w: point(out, triton_python, *w), work):
      for row in rows:
        f.write(json.dumps(row) + "\n"); f.flush()
        print(json.dumps(row), flush=True)


main()
