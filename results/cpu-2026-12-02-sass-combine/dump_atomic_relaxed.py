import functools, runpy, sys
from jax._src.pallas.triton import lowering
from jax._src.lib.triton import dialect as tt_dialect
lowering._atomic_rmw = functools.partial(lowering._atomic_rmw, semantic=tt_dialect.MemSemantic.RELAXED)
from tokamax_softcap import patched
patched.pallas_triton_vjp.ATOMIC_DQ = True
sys.argv = ['dump_ttir.py'] + sys.argv[1:]
runpy.run_path('results/cpu-2026-12-01-compile-probe/dump_ttir.py', run_name='__main__')
