"""Compares `grid.py`'s shared memory with the VJP's bound, old and new.

Usage: python bound.py GRID.jsonl [MORE.jsonl ...]
Per point, the largest VJP kernel's shared memory against patch 0025's bound
before (`old`) and after (`new`) its two VJP terms: where a causal loop's
main steps run on wgmma and its diagonal steps, of half a block, cannot
(fewer than 16 rows: wgmma's 16-bit dots take 16), they run on `mma`, which
takes the held tiles in another layout, so the loop keeps them twice;
without wgmma (sm80, or dots of fewer than 64 rows) a loop of two or more
steps keeps its held tiles and `max(stages - 1, 1)` copies of both loaded
tiles, of one with one stage (all of the grid's loops are the VJP's, of
16-bit dots).
"""
import collections, json, sys

BUDGET = 232_448  # sm90


def loop(stages, warps, steps, rows, dot_rows, row_bytes, held, sm,
         causal, new):
  copies = min(stages, steps)
  wgmma = sm == 90 and dot_rows % 64 == 0 and warps % 4 == 0
  if wgmma:
    both = steps >= 2
    loaded = copies * rows * (2 * row_bytes if both else row_bytes)
    if new and causal and rows // 2 < 16 and steps >= 2:
      loaded = max(loaded, held)
    return loaded + held
  if new and steps >= 2:
    loaded = 2 * row_bytes if stages >= 2 else row_bytes
    return min(max(stages - 1, 1), steps) * rows * loaded + held
  return copies * rows * row_bytes


def bound(head_dim, config, seq_len, sm, causal, new):
  r = head_dim * 2
  steps = lambda rows: -(-seq_len // rows)
  m1, n1, m2, n2, w, s = config
  return max(
      loop(s, w, steps(m1), m1, n1, r, n1 * 2 * r, sm, causal, new),
      loop(s, w, steps(n2), n2, m2, r, m2 * 2 * r, sm, causal, new))


def main():
  points = collections.defaultdict(int)
  lines = [line for path in sys.argv[1:] for line in open(path)]
  for line in lines:
    row = json.loads(line)
    if "error" in row:
      print("error", row); continue
    key = (row["head_dim"], row["causal"], row["sm"], tuple(row["vjp"]))
    points[key] = max(points[key], row["shared"])
  print("| head_dim | causal | sm | config | shared | old | new | new/shared |")
  print("|---|---|---|---|---|---|---|---|")
  worst, caught, wrong = 0, [], []
  for (d, causal, sm, config), shared in sorted(points.items()):
    old = bound(d, config, 2048, sm, causal, False)
    new = bound(d, config, 2048, sm, causal, True)
    worst = max(worst, new / shared)
    budget = BUDGET if sm == 90 else 166_912
    if new > budget >= old:
      caught.append((d, causal, sm, config, shared, new))
    if new > shared:
      wrong.append((d, causal, sm, config, shared, new))
    print(f"| {d} | {causal} | {sm} | {config} | {shared:,} | {old:,} |"
          f" {new:,} | {new / shared:.3f} |")
  print(f"\n{len(points)} points; largest new / shared {worst:.3f}")
  print("new bound above the allocation:", wrong)
  print("rejected by new, not by old:", caught)
  over = [(k, v) for k, v in points.items()
          if v > (BUDGET if k[2] == 90 else 166_912)]
  missed = [(k, v) for k, v in over
            if bound(k[0], k[3], 2048, k[2], k[1], True)
            <= (BUDGET if k[2] == 90 else 166_912)]
  print(f"{len(over)} above the budget; the new bound misses {len(missed)}:")
  for k, v in missed:
    print("  ", k, v, bound(k[0], k[3], 2048, k[2], k[1], True))


if __name__ == "__main__":
  main()
