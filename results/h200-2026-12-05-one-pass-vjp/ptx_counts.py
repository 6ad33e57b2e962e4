"""Summarizes a MOSAIC_GPU_DUMP_TO folder: per kernel, ptxas's registers and
spills and the static counts of the PTX instructions that bound the VJP."""
import collections
import pathlib
import re
import sys

OPS = ("wgmma.mma_async", "ex2.approx", "tanh.approx", "fma.rn", "mul.f32",
       "cp.reduce.async.bulk", "cp.async.bulk.tensor", "st.shared", "ld.shared",
       "stmatrix", "ldmatrix", "mbarrier.try_wait", "bar.sync",
       "wgmma.wait_group")

for ptxas in sorted(pathlib.Path(sys.argv[1]).glob("*.ptxas")):
  text = ptxas.read_text()
  regs = re.findall(r"Used (\d+) registers", text)
  spill = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
  counts = collections.Counter()
  ptx = ptxas.with_suffix(".ptx")
  if ptx.exists():
    text = ptx.read_text()
    for o in OPS:
      counts[o] = len(re.findall(r"\b" + re.escape(o), text))
  print(f"{ptxas.stem}: registers {regs} spills {spill}")
  print("   " + ", ".join(f"{o} {counts[o]}" for o in OPS if counts[o]))
