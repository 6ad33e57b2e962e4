"""Runs dump_ttir.py with the WIP atomic-dq VJP (`ATOMIC_DQ`).

Usage, from the repository root, with
results/h200-2026-12-02-derivative/scripts/0026-WIP-atomic-dq.patch copied
into tokamax_softcap/patches/: CAP=50 python -P dump_atomic.py OUTDIR
B,T,H,KV,D DTYPE {default,highest}. With ORDER=relaxed, Pallas's
`_atomic_rmw` lowering is given `MemSemantic.RELAXED` (its default is
acquire-release and `plgpu.atomic_add` has no argument for it).
"""
import functools, os, runpy, sys
if os.environ.get("ORDER") == "relaxed":
  from jax._src.pallas.triton import lowering
  from jax._src.lib.triton import dialect as tt_dialect
  lowering._atomic_rmw = functools.partial(
      lowering._atomic_rmw, semantic=tt_dialect.MemSemantic.RELAXED)
from tokamax_softcap import patched
patched.pallas_triton_vjp.ATOMIC_DQ = True
sys.argv = ['dump_ttir.py'] + sys.argv[1:]
runpy.run_path('results/cpu-2026-12-01-compile-probe/dump_ttir.py', run_name='__main__')
