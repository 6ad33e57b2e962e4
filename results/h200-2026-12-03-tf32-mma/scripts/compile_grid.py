"""Compiles f32 configs whose TF32 dots run on mma, with the shared-memory check off.

Usage: python -P compile_grid.py OUT.jsonl
Forward configs with 16- and 32-row blocks of queries and VJP configs with 16-
and 32-row blocks (dots of fewer than 64 rows: not wgmma) at head_dim 128, 256
and 512, f32 inputs at the default precision (TF32 dots on a GPU), B1 T2048
H8/4, causal, cap 50: the bound the op computes and whether XLA compiles the
kernels, or the shared memory its error requested; as
`h200-2026-12-03-smem-vjp/scripts/compile_grid.py`, whose lowering, compiling
and summary this runs on these points.
"""
import importlib.util, pathlib

_PATH = (pathlib.Path(__file__).parents[2] / "h200-2026-12-03-smem-vjp"
         / "scripts" / "compile_grid.py")
_SPEC = importlib.util.spec_from_file_location("smem_vjp_grid", _PATH)
grid = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grid)

FWD = [(q, k, 4, s) for q in (16, 32) for k in (32, 64, 128) for s in (2, 3, 4)]
VJP = [(m, n, n, m, 4, s) for m, n in ((16, 16), (16, 32), (32, 32))
       for s in (1, 2, 3, 4)]
grid.POINTS = ([("forward", "float32", d, c, True) for d in (128, 256, 512)
                for c in FWD]
               + [("vjp", "float32", d, c, True) for d in (128, 256, 512)
                  for c in VJP])

if __name__ == "__main__":
  grid.main()
