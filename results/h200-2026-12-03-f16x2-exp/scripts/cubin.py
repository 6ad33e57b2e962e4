"""Compiles `dump_ttir.py`'s kernels for sm90 to cubins with Triton 3.6; counts ex2 in the PTX.

Usage: PYTHON_WITH_TRITON cubin.py OUTDIR (triton 3.6.0; its bundled ptxas
assembles the PTX, so inline PTX of a probe is checked too).
"""
import json, pathlib, sys
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import IRSource, make_backend
d = pathlib.Path(sys.argv[1])
params = {n: (int(s), int(w)) for n, s, w in json.loads((d / "params.json").read_text())}
target = GPUTarget("cuda", 90, 32)
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
  for ext in ("ttgir", "llir", "ptx", "cubin"):
    module = passes[ext](module, metadata)
    if ext == "ptx":
      ptx = module
  print(name, "cubin bytes", len(module), "ex2.approx.f16x2 in ptx:", ptx.count("ex2.approx.f16x2"), "ex2.approx.ftz.f32:", ptx.count("ex2.approx.ftz.f32"), "shared", metadata["shared"])
