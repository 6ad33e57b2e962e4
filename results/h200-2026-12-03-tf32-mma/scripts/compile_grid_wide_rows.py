"""Compiles f32 VJP configs whose loaded tiles have more rows than their dots.

Usage: python -P compile_grid_wide_rows.py OUT.jsonl
Without a mask (the causal loops need loaded tiles of at most the dots' rows):
(block_m1, block_n1, block_m2, block_n2) = (64, 32, 32, 64), (64, 16, 16, 64)
and (32, 16, 16, 32), 1 to 4 stages, 4 warps, at head_dim 128, 256 and 512,
f32 at the default precision (TF32 dots on mma), B1 T2048 H8/4, cap 50; as
`compile_grid.py`.
"""
import importlib.util, pathlib

_PATH = pathlib.Path(__file__).parent / "compile_grid.py"
_SPEC = importlib.util.spec_from_file_location("tf32_mma_grid", _PATH)
mma = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(mma)

mma.grid.POINTS = [
    ("vjp", "float32", d, (m, n, n, m, 4, s), False)
    for d in (128, 256, 512)
    for m, n in ((64, 32), (64, 16), (32, 16))
    for s in (1, 2, 3, 4)
]

if __name__ == "__main__":
  mma.grid.main()
