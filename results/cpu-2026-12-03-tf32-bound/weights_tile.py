"""Patch 0025's VJP bound with the weights' tile, against Triton 3.6's allocations.

Usage: python weights_tile.py > weights-tile.md
`cpu-2026-12-03-smem-vjp/bound.py`'s comparison (300 VJP configs for sm90 and
sm80, sequences of 2,048), with the term this record adds as `new`: a loop
without wgmma, of two or more steps, also keeps a 16-bit tile of `rows` by
`dot_rows` (the weights). Then the VJP kernels of
`cpu-2026-12-02-smem-bound/grid.jsonl` (16-bit, default precision,
sequences of 1,024) against the same bound.
"""
import importlib.util, json, pathlib, sys

_RESULTS = pathlib.Path(__file__).parents[1]
_SPEC = importlib.util.spec_from_file_location(
    "bound", _RESULTS / "cpu-2026-12-03-smem-vjp" / "bound.py")
base = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(base)
_LOOP = base.loop


def loop(stages, warps, steps, rows, dot_rows, row_bytes, held, sm, causal,
         new):
  b = _LOOP(stages, warps, steps, rows, dot_rows, row_bytes, held, sm,
            causal, new)
  wgmma = sm == 90 and dot_rows % 64 == 0 and warps % 4 == 0
  if new and not wgmma and steps >= 2:
    b += rows * dot_rows * 2
  return b


base.loop = loop  # `base.bound` calls it.


def main():
  grid = _RESULTS / "cpu-2026-12-03-smem-vjp"
  sys.argv[1:] = [str(grid / "grid.jsonl"), str(grid / "grid-extra.jsonl")]
  base.main()
  print("\nVJP kernels of cpu-2026-12-02-smem-bound/grid.jsonl:\n")
  print("| variant | head_dim | config | shared | bound | bound/shared |")
  print("|---|---|---|---|---|---|")
  for line in open(_RESULTS / "cpu-2026-12-02-smem-bound" / "grid.jsonl"):
    r = json.loads(line)
    if ("vjp" not in r["kernel"] or r["dtype"] != "bfloat16"
        or r["precision"] != "default"):
      continue
    sm = 80 if r["variant"] == "sm80" else 90
    b = base.bound(r["head_dim"], tuple(r["vjp"]), 1024, sm,
                   r["variant"] != "full", True)
    print(f"| {r['variant']} | {r['head_dim']} | {tuple(r['vjp'])} |"
          f" {r['shared']:,} | {b:,} | {b / r['shared']:.3f} |")


if __name__ == "__main__":
  main()
