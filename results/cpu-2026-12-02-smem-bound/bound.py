"""Compares `grid.py`'s shared memory with patch 0025's lower bound.

Usage: python bound.py GRID.jsonl
The bound (`pipelined_tiles_bytes`, restated here): with num_stages >= 2,
`stages * rows * row bytes` of the wider tile of a loop, of both tiles where
16-bit dots run on wgmma (sm90, the dots' output rows a multiple of 64,
warps a multiple of 4). Forward: k and v tiles of `block_k` rows for dots of
`block_q` rows. VJP: the larger of its dk/dv loop (q and dout, `block_m1`
rows, dots of `block_n1`) and its dq loop (k and v, `block_n2`, dots of
`block_m2`). Prints a table row per kernel and the largest bound / shared.
"""
import json, sys


def loop_bound(stages, warps, rows, dot_rows, row_bytes, sm, sixteen_bit):
  if stages < 2:
    return 0
  both = sm == 90 and dot_rows % 64 == 0 and warps % 4 == 0 and sixteen_bit
  return stages * rows * (2 * row_bytes if both else row_bytes)


rows = [json.loads(l) for l in open(sys.argv[1])]
print("| variant | D | kernel | config | shared | bound | bound / shared | forward: bound + q tile == shared |")
print("|---|---|---|---|---|---|---|---|")
worst = 0.0
for r in rows:
  if "error" in r:
    print(f"| {r.get('tag')} | error: {r['error'][:80]} | | | | | | |"); continue
  sixteen_bit = r["dtype"] != "float32"
  row_bytes = r["head_dim"] * (2 if sixteen_bit else 4)
  sm = 80 if r["variant"] == "sm80" else 90
  fwd = r["kernel"].startswith("pallas_flash_attention_fwd")
  if fwd:
    bq, bk, w, s = cfg = r["fwd"]
    bound = loop_bound(s, w, bk, bq, row_bytes, sm, sixteen_bit)
    both = bound == s * bk * 2 * row_bytes and s >= 2
    with_q = (bound + bq * row_bytes == r["shared"]) if both else ""
  else:
    m1, n1, m2, n2, w, s = cfg = r["vjp"]
    bound = max(loop_bound(s, w, m1, n1, row_bytes, sm, sixteen_bit),
                loop_bound(s, w, n2, m2, row_bytes, sm, sixteen_bit))
    with_q = ""
  ratio = bound / r["shared"]
  worst = max(worst, ratio)
  kernel = "forward" if fwd else r["kernel"].removeprefix("pallas_flash_attention_")
  print(f"| {r['variant']} | {r['head_dim']} | {kernel} | {tuple(cfg)} | {r['shared']:,} | {bound:,} | {ratio:.2f} | {with_q} |")
print(f"\nLargest bound / shared: {worst:.3f} (above 1 the bound would reject a config that fits).")
