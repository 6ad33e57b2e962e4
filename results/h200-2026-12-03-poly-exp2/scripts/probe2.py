"""Times `derivative.py`'s forms of the soft cap's derivative on the GPU.

Usage: python -P probe2.py OUTDIR
`bench`'s timers (CUPTI, median of `REPS` rounds over 2 input sets) of
`ours` (bf16, cap 50, B2 T8192 H8/4; head_dim 64 causal and full, 128 causal
and full), with the kernels as they are ("exact") and with each form, one
shape at a time. Writes OUTDIR/times2.jsonl.
"""
import contextlib, dataclasses, json, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import derivative
from tokamax_softcap import bench

REPS = 10
SHAPES = [bench.Shape(seq_len=8192, head_dim=d, heads="gqa", mask=m)
          for d in (64, 128) for m in ("causal", "full")]


def main():
  out = pathlib.Path(sys.argv[1])
  with open(out / "times2.jsonl", "w") as f:
    for shape in SHAPES:
      for name in ("exact", "no4", "rr", "exact"):
        with (contextlib.nullcontext() if name == "exact"
              else derivative.enabled(name)):
          for r in bench.run([shape], ["ours"], reps=REPS, input_sets=2):
            row = dict(exp=name, **dataclasses.asdict(r))
            f.write(json.dumps(row) + "\n"); f.flush()
            print(name, r.shape, r.implementation, r.fwd_ms, r.fwd_bwd_ms,
                  r.error, flush=True)


if __name__ == "__main__":
  main()
