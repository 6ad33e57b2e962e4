"""Compares measured shared memory with patch 0025's lower bound.

Usage: python bound.py cpu GRID.jsonl   (`grid.py`'s output: Triton 3.6,
         sequences of 1,024)
       python bound.py h200 COMPILE_GRID.jsonl
         (`h200-2026-12-02-smem-bound/scripts/compile_grid.py`'s output,
         sequences of 2,048; its `bound` field is an earlier form of the
         bound, ignored here)
The bound (`tiles_bytes`, restated): per loop, `copies * rows * B` with
`copies = min(stages, steps)` and B the bytes of a row of the wider loaded
tile; where 16-bit dots run on wgmma (sm90, the dots' output rows a
multiple of 64, warps a multiple of 4) the held tiles are added, and B is
both tiles' bytes in a loop of two or more steps with two or more stages
or overlapping uses (the VJP's loops). Forward: loads k and v (`block_k`
rows) for dots of `block_q` rows, holds q. VJP: the larger of its dk/dv
loop (loads q and dout, `block_m1` rows; dots of `block_n1` rows; holds k
and v) and its dq loop (loads k and v, `block_n2`; dots of `block_m2`;
holds q and dout). The CPU grid's f32 kernels were lowered on the CPU,
whose f32 preset is F32_F32_F32 (IEEE dots), for which the bound is 0.
Prints a markdown table and a summary.
"""
import json, sys

BUDGET = 232_448  # sm90


def loop(stages, warps, steps, rows, dot_rows, row_bytes, held, overlapping,
         sm, sixteen_bit):
  copies = min(stages, steps)
  wgmma = sm == 90 and dot_rows % 64 == 0 and warps % 4 == 0 and sixteen_bit
  if not wgmma:
    return copies * rows * row_bytes
  both = steps >= 2 and (stages >= 2 or overlapping)
  return copies * rows * (2 * row_bytes if both else row_bytes) + held


def bound(kind, dtype, head_dim, config, seq_len, sm=90):
  sixteen_bit = dtype != "float32"
  r = head_dim * (2 if sixteen_bit else 4)
  steps = lambda rows: -(-seq_len // rows)
  if kind == "forward":
    bq, bk, w, s = config
    return loop(s, w, steps(bk), bk, bq, r, bq * r, False, sm, sixteen_bit)
  m1, n1, m2, n2, w, s = config
  return max(
      loop(s, w, steps(m1), m1, n1, r, n1 * 2 * r, True, sm, sixteen_bit),
      loop(s, w, steps(n2), n2, m2, r, m2 * 2 * r, True, sm, sixteen_bit))


def cpu(rows):
  print("| variant | head_dim | kernel | config | shared (B) | bound (B) | bound / shared |")
  print("|---|---|---|---|---|---|---|")
  worst = 0.0
  for x in rows:
    kind = "forward" if "fwd" in x["kernel"] else "vjp"
    config = x["fwd"] if kind == "forward" else x["vjp"]
    if x["kernel"].endswith("delta"):
      kind, config = "delta", x["vjp"]
    ieee = x["dtype"] == "float32"  # The CPU's F32_F32_F32 preset.
    b = 0 if kind == "delta" or ieee else bound(
        kind, x["dtype"], x["head_dim"], config, 1024,
        80 if x["variant"] == "sm80" else 90)
    worst = max(worst, b / x["shared"])
    print(f"| {x['variant']} | {x['head_dim']} | {kind} | {tuple(config)} |"
          f" {x['shared']:,} | {b:,} | {b / x['shared']:.2f} |")
  print(f"\n{len(rows)} kernels; largest bound / shared: {worst:.3f}"
        " (above 1 the bound would reject a config that fits).")


def h200(rows):
  print("| kernel | dtype | head_dim | config | compiled | requested (B) | bound (B) | rejected |")
  print("|---|---|---|---|---|---|---|---|")
  wrong = caught = 0
  for x in rows:
    b = bound(x["kernel"], x["dtype"], x["head_dim"], x["config"], 2048)
    rejected = b > BUDGET
    wrong += (x["compiled"] and rejected) or b > x.get("requested", b)
    caught += rejected and not x["compiled"]
    print(f"| {x['kernel']} | {x['dtype']} | {x['head_dim']} |"
          f" {tuple(x['config'])} | {'yes' if x['compiled'] else 'no'} |"
          f" {x.get('requested', 0):,} | {b:,} | {'yes' if rejected else ''} |")
  failed = sum(not x["compiled"] for x in rows)
  print(f"\n{len(rows)} configs, {failed} failed to compile; the bound rejects"
        f" {caught} of those and wrongly (a config that compiled, or above"
        f" what a failure requested) {wrong}.")


rows = [json.loads(l) for l in open(sys.argv[2])]
{"cpu": cpu, "h200": h200}[sys.argv[1]](rows)
