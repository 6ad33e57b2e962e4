"""Compiles dumped Triton IR for sm90; prints each loop's SASS opcode counts.

Usage: python sass_loops.py DIR [NAME_SUBSTRING], DIR as the compile probe's
dump_ttir.py wrote it (`cpu-2026-12-01-compile-probe/`). Needs a Triton wheel,
which ships ptxas, cuobjdump and nvdisasm; no GPU.
Writes DIR/N-KERNEL.cubin and .sass. A loop is the span from a backward
branch's target to the branch. Each loop's 30 most frequent opcodes, or, with
the environment's TOP=N, N of them (TOP=0: all).
"""
import json, os, pathlib, re, subprocess, sys, collections
import triton
from triton.backends.compiler import GPUTarget
d = pathlib.Path(sys.argv[1])
only = sys.argv[2] if len(sys.argv) > 2 else ""
num_ops = int(os.environ.get("TOP", "30")) or None
params = {n: (int(s), int(w)) for n, s, w in json.loads((d / "params.json").read_text())}
bin_ = pathlib.Path(triton.__file__).parent / "backends/nvidia/bin"
for f in sorted(d.glob("*.ttir")):
  name = f.stem.split("-", 1)[1]
  if only not in name: continue
  stages, warps = params[name]
  k = triton.compile(str(f), target=GPUTarget("cuda", 90, 32), options=dict(num_warps=warps, num_stages=stages))
  cub = d / f"{f.stem}.cubin"; cub.write_bytes(k.asm["cubin"])
  sass = subprocess.run([str(bin_ / "cuobjdump"), "-sass", str(cub)], capture_output=True, text=True).stdout
  (d / f"{f.stem}.sass").write_text(sass)
  lines = []
  for ln in sass.splitlines():
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", ln)
    if m: lines.append((int(m.group(1), 16), m.group(2)))
  addr = {a: i for i, (a, _) in enumerate(lines)}
  print(f"== {name}: warps {warps} stages {stages} shared {k.metadata.shared} B, {len(lines)} instrs")
  # loops: backward branches
  for i, (a, ins) in enumerate(lines):
    m2 = re.search(r"BRA .*?0x([0-9a-f]+)", ins)
    if m2:
      t = int(m2.group(1), 16)
      if t < a and t in addr:
        body = [x for _, x in lines[addr[t]:i + 1]]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in body)
        top = ", ".join(f"{o} {c}" for o, c in ops.most_common(num_ops))
        print(f"  loop {t:#x}-{a:#x}: {len(body)} instrs: {top}")
