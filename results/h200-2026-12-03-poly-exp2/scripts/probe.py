"""Times and checks softmax weights from a polynomial `2**x` on the GPU.

Usage: python -P probe.py OUTDIR
For each shape (bf16, B2 T8192 H8/4; head_dim 64 and 128 causal and full,
256 causal), `bench`'s timers (CUPTI, median of `REPS` rounds over 2 input
sets) of `ours` (cap 50) and `ours-nocap`, with the kernels as they are
("exact"), with `poly.enabled()` ("poly": the weights' `2**x` from the FMA
pipe) and with `poly.enabled(True)` ("poly-all": the cap's too), one shape at
a time. Then the gradients' errors against the fp32 reference
(`harness.gradients`, causal; bf16 and f32 at `PRECISION`) of pr-check
(head_dim 128) and of pr-check at head_dim 64, each way. Writes
OUTDIR/times.jsonl and errors.jsonl.
"""
import contextlib, dataclasses, json, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import poly
from tokamax_softcap import bench, harness

REPS = 10
SHAPES = [bench.Shape(seq_len=8192, head_dim=d, heads="gqa", mask=m)
          for d, m in ((64, "causal"), (64, "full"), (128, "causal"),
                       (128, "full"), (256, "causal"))]
MODES = ("exact", "poly", "poly-all")


def mode(name):
  if name == "exact":
    return contextlib.nullcontext()
  return poly.enabled(everywhere=name == "poly-all")


def main():
  out = pathlib.Path(sys.argv[1])
  with open(out / "times.jsonl", "w") as f:
    for shape in SHAPES:
      for name in MODES:
        with mode(name):
          for r in bench.run([shape], ["ours", "ours-nocap"], reps=REPS,
                             input_sets=2):
            row = dict(exp=name, **dataclasses.asdict(r))
            f.write(json.dumps(row) + "\n"); f.flush()
            print(name, r.shape, r.implementation, r.fwd_ms, r.fwd_bwd_ms,
                  r.error, flush=True)
  configs = [harness.PR_CHECK,
             dataclasses.replace(harness.PR_CHECK, name="pr-check-d64",
                                 head_dim=64)]
  with open(out / "errors.jsonl", "w") as f:
    for config in configs:
      for dtype in ("bfloat16", "float32"):
        for name in MODES:
          with mode(name):
            g = harness.gradients(config, "causal", dtype)
          errors = harness.relative_errors(g.actual, g.expected)
          row = dict(config=config.name, dtype=dtype, exp=name, **errors)
          f.write(json.dumps(row) + "\n"); f.flush()
          print(row, flush=True)


if __name__ == "__main__":
  main()
