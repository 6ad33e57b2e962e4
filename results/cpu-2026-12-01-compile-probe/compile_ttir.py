"""Compiles `dump_ttir.py`'s Triton IR for sm90 (SM=80: sm80); prints shared memory, registers, spills.

Usage: PYTHON_WITH_TRITON compile_ttir.py OUTDIR (triton 3.6.0; its ptxas
gives the registers and spills, `ptxas -v`).
"""
import json, pathlib, re, subprocess, sys
import os
import triton
from triton.backends.compiler import GPUTarget
d = pathlib.Path(sys.argv[1])
params = {n: (int(s), int(w)) for n, s, w in json.loads((d / "params.json").read_text())}
SM = int(os.environ.get("SM", "90"))
ptxas = pathlib.Path(triton.__file__).parent / "backends/nvidia/bin/ptxas"
for f in sorted(d.glob("*.ttir")):
  name = f.stem.split("-", 1)[1]
  stages, warps = params[name]
  try:
    k = triton.compile(str(f), target=GPUTarget("cuda", SM, 32), options=dict(num_warps=warps, num_stages=stages))
  except Exception as e:
    print(f"{name}: compile failed: {str(e).splitlines()[0][:300]}"); continue
  ptx = d / f"{f.stem}.ptx"; ptx.write_text(k.asm["ptx"])
  r = subprocess.run([str(ptxas), f"-arch=sm_{SM}" + ("a" if SM == 90 else ""), "-v", str(ptx), "-o", "/dev/null"], capture_output=True, text=True)
  regs = re.findall(r"Used (\d+) registers", r.stderr)
  spill = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
  print(f"{name}: warps {warps} stages {stages} shared {k.metadata.shared} B, registers {regs}, spill stores/loads {spill}")
