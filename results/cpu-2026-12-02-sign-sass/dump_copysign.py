"""Runs the compile probe's dump_ttir.py with the copied-sign soft cap of
`h200-2026-12-02-sign/scripts/sign.py` in place of patch 0023's.

Usage, from the repository root: CAP=50 python dump_copysign.py OUTDIR
B,T,H,KV,D DTYPE {default,highest} (the arguments of dump_ttir.py).
"""
import runpy, sys
sys.path.insert(0, 'results/h200-2026-12-02-sign/scripts')
import sign
from tokamax_softcap import patched
patched.pallas_triton_vjp.soft_cap = sign.soft_cap_copysign
sys.argv = ['dump_ttir.py'] + sys.argv[1:]
runpy.run_path('results/cpu-2026-12-01-compile-probe/dump_ttir.py', run_name='__main__')
print('copysign traced', sign.CALLS['copysign'])
