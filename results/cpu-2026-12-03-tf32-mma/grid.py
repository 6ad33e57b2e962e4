"""Shared memory of f32 kernels whose TF32 dots run on mma, on a CPU.

Usage, from the repository root (TRITON_PYTHON: a Python with triton==3.6.0):
  python results/cpu-2026-12-03-tf32-mma/grid.py OUTDIR TRITON_PYTHON [JOBS]
The points of `h200-2026-12-03-tf32-mma/scripts/compile_grid.py` (f32, TF32
dots, B1 T2048 H8/4, causal, cap 50), for sm90 and sm80: each lowered with
`../cpu-2026-12-01-compile-probe/dump_ttir.py`, its configured kernel
compiled with `../cpu-2026-12-02-smem-bound/shared.py`, beside the bound the
op computes for that compute capability (`../cpu-2026-12-03-tf32-bound/
bounds.py`'s `trace_bounds`). Writes OUTDIR/grid.jsonl, one line a kernel.
"""
import concurrent.futures, importlib.util, json, os, pathlib, subprocess, sys
import jax

HERE = pathlib.Path(__file__).parent
DUMP = HERE.parent / "cpu-2026-12-01-compile-probe" / "dump_ttir.py"
SHARED = HERE.parent / "cpu-2026-12-02-smem-bound" / "shared.py"


def _load(name, path):
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


# The H200 grid's points first: `bounds` then installs its recorder last.
POINTS = _load("h200_grid", HERE.parent / "h200-2026-12-03-tf32-mma" / "scripts"
               / "compile_grid.py").grid.POINTS
bounds = _load("bounds", HERE.parent / "cpu-2026-12-03-tf32-bound" / "bounds.py")
TF32 = jax.lax.DotAlgorithmPreset.TF32_TF32_F32


def point(out, triton_python, sm, kind, d, blocks):
  tag = f"sm{sm}-{kind}-d{d}-" + "x".join(map(str, blocks))
  o = out / tag
  env = {**os.environ, "SM": sm}
  if kind == "forward":
    names = ("block_q", "block_k", "num_warps", "num_stages")
    configs = ["-", json.dumps(dict(zip(names, blocks)))]
  else:
    names = ("block_m1", "block_n1", "block_m2", "block_n2", "num_warps",
             "num_stages")
    configs = [json.dumps(dict(zip(names, blocks)))]
  base = dict(sm=int(sm), kernel=kind, head_dim=d, config=blocks)
  p = subprocess.run([sys.executable, "-P", str(DUMP), str(o),
                      f"1,2048,8,4,{d}", "float32", "tf32", *configs],
                     env=env, capture_output=True, text=True)
  if p.returncode:
    return [base | dict(error=p.stderr.strip().splitlines()[-1][:300])]
  p = subprocess.run([triton_python, str(SHARED), str(o)], env=env,
                     capture_output=True, text=True)
  rows = [json.loads(line) for line in p.stdout.splitlines()]
  vjp = lambda row: "vjp" in row["kernel"]
  return [base | row for row in rows if vjp(row) == (kind == "vjp")] or [
      base | dict(error=p.stderr[-300:])]


def main():
  out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
  triton_python, jobs = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2
  work = []
  for sm in ("90", "80"):
    for kind, _, d, blocks, _ in POINTS:
      op = bounds.grid.op_for(kind, blocks)
      cc = f"{sm[0]}.{sm[1]}"
      bound = [n for c, n in bounds.trace_bounds(op, d, TF32, cc)
               if hasattr(c, "block_m1") == (kind == "vjp")][0]
      work.append(((sm, kind, d, blocks), bound))
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool, \
       open(out / "grid.jsonl", "w") as f:
    results = pool.map(lambda w: point(out, triton_python, *w[0]), work)
    for (_, bound), rows in zip(work, results):
      for row in rows:
        row["bound"] = bound
        if "shared" in row:
          row["bound_at_most_shared"] = bound <= row["shared"]
        f.write(json.dumps(row) + "\n"); f.flush()


if __name__ == "__main__":
  main()
