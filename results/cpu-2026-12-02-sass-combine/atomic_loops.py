"""Prints, per loop of the VJP's SASS in each DIR (as sass_loops2.py wrote
it), the counts of its atomic, barrier, MMA, MUFU and spill instructions.

Usage: python atomic_loops.py DIR... (e.g. /tmp/a128 /tmp/r64 /tmp/r128).
"""
import collections, glob, re, sys
for d in sys.argv[1:]:
  print("##", d)
  sass = open(glob.glob(f"{d}/1-*.sass")[0]).read()
  lines = []
  for ln in sass.splitlines():
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", ln)
    if m: lines.append((int(m.group(1), 16), m.group(2)))
  addr = {a: i for i, (a, _) in enumerate(lines)}
  for i, (a, ins) in enumerate(lines):
    m2 = re.search(r"BRA .*?0x([0-9a-f]+)", ins)
    if m2 and int(m2.group(1), 16) < a and int(m2.group(1), 16) in addr:
      body = [x for _, x in lines[addr[int(m2.group(1), 16)]:i + 1]]
      ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x).split()[0] for x in body)
      sel = {k: v for k, v in ops.items()
             if re.match(r"(ATOM|RED|MEMBAR|ERRBAR|HMMA|HGMMA|STL|LDL|MUFU)", k)}
      print(f"  loop {m2.group(1)}-{a:#x}: {len(body)} instrs:", sel)
