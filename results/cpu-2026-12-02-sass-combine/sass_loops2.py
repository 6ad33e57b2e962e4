"""As sass_loops.py, but runs Triton's make_ttir passes (combine, ...) first,
as XLA's Triton pipeline does on a GPU."""
import json, pathlib, re, subprocess, sys, collections
import triton
from triton.backends.compiler import GPUTarget
from triton._C.libtriton import ir
from triton.backends.nvidia.compiler import CUDABackend
d = pathlib.Path(sys.argv[1])
only = sys.argv[2] if len(sys.argv) > 2 else ""
params = {n: (int(s), int(w)) for n, s, w in json.loads((d / "params.json").read_text())}
bin_ = pathlib.Path(triton.__file__).parent / "backends/nvidia/bin"
for f in sorted(d.glob("*.ttir")):
  if f.stem.endswith(".comb"): continue
  name = f.stem.split("-", 1)[1]
  if only not in name: continue
  stages, warps = params[name]
  ctx = ir.context(); ir.load_dialects(ctx)
  be = CUDABackend(GPUTarget("cuda", 90, 32)); be.load_dialects(ctx)
  mod = ir.parse_mlir_module(str(f), ctx)
  pm = ir.pass_manager(ctx)
  from triton._C.libtriton import passes
  passes.common.add_inliner(pm); passes.ttir.add_rewrite_tensor_pointer(pm)
  passes.common.add_canonicalizer(pm); passes.ttir.add_combine(pm)
  passes.ttir.add_reorder_broadcast(pm); passes.common.add_cse(pm)
  passes.common.add_symbol_dce(pm); passes.ttir.add_loop_unroll(pm)
  pm.run(mod, 'make_ttir')
  g = d / f"{f.stem}.comb.ttir"; g.write_text(str(mod))
  k = triton.compile(str(g), target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages))
  cub = d / f"{f.stem}.cubin"; cub.write_bytes(k.asm["cubin"])
  sass = subprocess.run([str(bin_ / "cuobjdump"), "-sass", str(cub)], capture_output=True, text=True).stdout
  (d / f"{f.stem}.sass").write_text(sass)
  lines = []
  for ln in sass.splitlines():
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", ln)
    if m: lines.append((int(m.group(1), 16), m.group(2)))
  addr = {a: i for i, (a, _) in enumerate(lines)}
  print(f"== {name}: warps {warps} stages {stages} shared {k.metadata.shared} B, {len(lines)} instrs")
  for i, (a, ins) in enumerate(lines):
    m2 = re.search(r"BRA .*?0x([0-9a-f]+)", ins)
    if m2:
      t = int(m2.group(1), 16)
      if t < a and t in addr:
        body = [x for _, x in lines[addr[t]:i + 1]]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in body)
        top = ", ".join(f"{o} {c}" for o, c in ops.most_common(24))
        print(f"  loop {t:#x}-{a:#x}: {len(body)} instrs: {top}")
