"""Prints the shared memory Triton allocates for `dump_ttir.py`'s kernels.

Usage: PYTHON_WITH_TRITON shared.py OUTDIR (triton 3.6.0). Runs Triton's
stages up to LLVM IR only (no PTX, no ptxas): the allocation is decided by
then. Environment SM=80 compiles for sm80 (default sm90); PTX=1 goes on to
PTX and a cubin (Triton's ptxas, which checks a kernel's inline PTX too) and
adds the counts of `ex2.approx` instructions in the PTX, and of MUFU
(special-function) and all instructions in the SASS (Triton's `nvdisasm`).
"""
import json, os, pathlib, subprocess, sys, tempfile
import triton
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import IRSource, make_backend

d = pathlib.Path(sys.argv[1])
params = {n: (int(s), int(w)) for n, s, w in json.loads((d / "params.json").read_text())}
SM = int(os.environ.get("SM", "90"))
target = GPUTarget("cuda", SM, 32)
for f in sorted(d.glob("*.ttir")):
  name = f.stem.split("-", 1)[1]
  stages, warps = params[name]
  backend = make_backend(target)
  context = ir.context()
  src = IRSource(str(f), context, backend)
  options = backend.parse_options(dict(num_warps=warps, num_stages=stages))
  metadata = {"target": target, **options.__dict__}
  passes = {}
  backend.add_stages(passes, options, src.language)
  module = src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
  counts = {}
  try:
    for ext in ("ttgir", "llir") + (("ptx", "cubin") if os.environ.get("PTX") else ()):
      module = passes[ext](module, metadata)
      if ext == "ptx":
        counts = {op: module.count(op) for op in ("ex2.approx.ftz.f32", "ex2.approx.f16x2")}
      if ext == "cubin":
        with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
          cubin.write(module); cubin.flush()
          nvdisasm = pathlib.Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
          sass = subprocess.run([nvdisasm, "-c", cubin.name], capture_output=True, text=True, check=True).stdout
        lines = [l.split("*/", 1)[1] for l in sass.splitlines() if l.strip().startswith("/*") and "*/" in l]
        counts["sass"] = sum(1 for l in lines if l.split() and l.split()[0] != "NOP")
        counts["MUFU"] = sum(1 for l in lines if "MUFU." in l)
  except Exception as e:
    print(json.dumps(dict(kernel=name, error=str(e).splitlines()[0][:200]))); continue
  print(json.dumps(dict(kernel=name, warps=warps, stages=stages, shared=metadata["shared"], **counts)))
