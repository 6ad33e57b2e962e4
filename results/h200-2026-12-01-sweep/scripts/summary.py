"""Forward / backward split and the targets' ratios of the bench JSON files.

Usage: python3 summary.py bench-1k-2k/bench.json bench-4k/bench.json ...
(backward = fwd+bwd minus fwd, both medians of their own rounds). XLA's
ratio shows as "—" where XLA failed (out of memory); ours, ours-nocap and
Mosaic GPU must have results for every shape.
"""

import collections
import json
import sys

print("| shape | fwd ours / no cap / Mosaic | bwd ours / no cap / Mosaic"
      " | cap fwd | cap bwd | cap fwd+bwd | ours / Mosaic fwd | bwd | fwd+bwd"
      " | XLA / ours |")
print("|---|---|---|---|---|---|---|---|---|---|")
for path in sys.argv[1:]:
  by_shape = collections.defaultdict(dict)
  for r in json.load(open(path))["results"]:
    by_shape[r["shape"]][r["implementation"]] = r
  for shape, impls in by_shape.items():
    o, n, m, x = (impls[k] for k in ("ours", "ours-nocap", "mosaic", "xla"))
    bwd = {
        k: r["fwd_bwd_ms"] - r["fwd_ms"]
        for k, r in impls.items()
        if r["fwd_bwd_ms"] is not None
    }
    xla_ratio = (
        "—"
        if x["fwd_bwd_ms"] is None
        else f"{x['fwd_bwd_ms'] / o['fwd_bwd_ms']:.2f}x"
    )
    print(
        f"| {shape} | {o['fwd_ms']:.2f} / {n['fwd_ms']:.2f} /"
        f" {m['fwd_ms']:.2f} | {bwd['ours']:.2f} / {bwd['ours-nocap']:.2f} /"
        f" {bwd['mosaic']:.2f} | {o['fwd_ms'] / n['fwd_ms']:.2f}x |"
        f" {bwd['ours'] / bwd['ours-nocap']:.2f}x |"
        f" {o['fwd_bwd_ms'] / n['fwd_bwd_ms']:.2f}x |"
        f" {o['fwd_ms'] / m['fwd_ms']:.2f}x | {bwd['ours'] / bwd['mosaic']:.2f}x"
        f" | {o['fwd_bwd_ms'] / m['fwd_bwd_ms']:.2f}x |"
        f" {xla_ratio} |"
    )
