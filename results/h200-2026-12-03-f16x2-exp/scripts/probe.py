"""Times and checks softmax weights from `ex2.approx.f16x2` on the GPU.

Usage: python -P probe.py OUTDIR
For each shape (bf16, B2 T8192 H8/4; head_dim 64 causal and full, 128
causal), `bench`'s timers (CUPTI, median of `REPS` rounds over 2 input sets)
of `ours` (cap 50) and `ours-nocap`, with the kernels as they are
("exact") and with `f16x2.enabled()`, one shape at a time. Then the
gradients' errors against the fp32 reference (`harness.gradients`, causal,
bf16 at the default precision) of pr-check (head_dim 128) and of pr-check
at head_dim 64, both ways. Writes OUTDIR/times.jsonl and errors.jsonl.
"""
import contextlib, dataclasses, json, pathlib, sys
sys.path.insert(0, str(pathlib.Path(__file__).parent))
import f16x2
from tokamax_softcap import bench, harness

REPS = 10
SHAPES = [bench.Shape(seq_len=8192, head_dim=64, heads="gqa", mask="causal"),
          bench.Shape(seq_len=8192, head_dim=64, heads="gqa", mask="full"),
          bench.Shape(seq_len=8192, head_dim=128, heads="gqa", mask="causal")]


def mode(name):
  return f16x2.enabled() if name == "f16x2" else contextlib.nullcontext()


def main():
  out = pathlib.Path(sys.argv[1])
  with open(out / "times.jsonl", "w") as f:
    for shape in SHAPES:
      for name in ("exact", "f16x2"):
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
      for name in ("exact", "f16x2"):
        with mode(name):
          g = harness.gradients(config, "causal", "bfloat16")
        errors = harness.relative_errors(g.actual, g.expected)
        f.write(json.dumps(dict(config=config.name, exp=name, **errors)) + "\n")
        f.flush()
        print(config.name, name, errors, flush=True)


if __name__ == "__main__":
  main()
