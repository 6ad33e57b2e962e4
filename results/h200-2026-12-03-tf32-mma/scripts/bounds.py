"""Patch 0025's final bound for the f32 configs XLA compiled on the H200, on a CPU.

Usage: python -P bounds.py > ../bounds.txt
The f32 configs (TF32 dots) of `run1/compile-grid.jsonl` and
`run3/compile-grid.jsonl` (runs 1 and 3 of this record; their `bound` columns
are earlier forms of the patch) and of
`h200-2026-12-03-smem-vjp/compile-grid.jsonl`, their bound traced with the
device taken for an sm90 GPU (`cpu-2026-12-03-tf32-bound/bounds.py`'s
`trace_bounds`), beside the H200's outcome. A config the bound rejects must
have failed, asking for at least the bound ("dv kernel" where XLA named the
smaller dv kernel of patch 0026); "missed" marks a failure the bound lets
through.
"""
import importlib.util, json, pathlib
import jax

_RESULTS = pathlib.Path(__file__).parents[2]
_SPEC = importlib.util.spec_from_file_location(
    "bounds", _RESULTS / "cpu-2026-12-03-tf32-bound" / "bounds.py")
bounds = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bounds)
TF32 = jax.lax.DotAlgorithmPreset.TF32_TF32_F32
GRIDS = ("h200-2026-12-03-smem-vjp/compile-grid.jsonl",
         "h200-2026-12-03-tf32-mma/run1/compile-grid.jsonl",
         "h200-2026-12-03-tf32-mma/run3/compile-grid.jsonl")


def main():
  counts = {}
  for grid in GRIDS:
    for line in open(_RESULTS / grid):
      r = json.loads(line)
      if r["dtype"] != "float32":
        continue
      kind, d, blocks = r["kernel"], r["head_dim"], tuple(r["config"])
      op = bounds.grid.op_for(kind, blocks)
      causal = r.get("causal", True)
      bound = [n for c, n in bounds.trace_bounds(op, d, TF32, causal=causal)
               if hasattr(c, "block_m1") == (kind == "vjp")][0]
      requested = r.get("requested")
      if r["compiled"]:
        verdict = "OK" if bound <= bounds.H200 else "WRONG: rejects it"
      elif bound <= bounds.H200:
        verdict = "missed"
      else:
        verdict = "OK" if requested >= bound else "dv kernel"
      counts[verdict] = counts.get(verdict, 0) + 1
      print(f"{kind:7} {d} {str(blocks):26} bound {bound:7} compiled"
            f" {str(r['compiled']):5} requested {requested}: {verdict}")
  print(counts)


if __name__ == "__main__":
  main()
