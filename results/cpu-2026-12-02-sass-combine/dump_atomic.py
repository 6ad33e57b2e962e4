import runpy, sys
from tokamax_softcap import patched
patched.pallas_triton_vjp.ATOMIC_DQ = True
sys.argv = ['dump_ttir.py'] + sys.argv[1:]
runpy.run_path('results/cpu-2026-12-01-compile-probe/dump_ttir.py', run_name='__main__')
