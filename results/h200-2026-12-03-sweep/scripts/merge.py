"""Merges bench runs into one sweep: T 1k-32k, head_dim 64/128/256, MHA/GQA.

Each (T, head_dim, heads) group of rows (causal and full, the four
implementations) is taken whole from one run, so every ratio is within one
run. Writes bench.{json,csv,md,png} and sources.csv into the sweep directory.

Usage (from the repository root, the runs' bench.tgz extracted into
/tmp/sweep/run-{a,b,c,d}):
  .venv/bin/python results/h200-2026-12-03-sweep/scripts/merge.py
"""

import csv
import json
import pathlib

from tokamax_softcap import bench

RESULTS = pathlib.Path("results")
SWEEP = RESULTS / "h200-2026-12-03-sweep"
RUNS = pathlib.Path("/tmp/sweep")

# (source label, bench.json, patches, {(T, head_dim)}): each group's run.
# head_dim 64 and 128 kernels are the same with patches 0001-0024, 0001-0025
# and 0001-0026 (0025 only rejects configs; 0026 changes head_dim 256 configs
# and splits dv off past 128 accumulator registers a thread, which the
# head_dim <= 128 configs do not reach).
SOURCES = [
    ("2026-12-02-configs/bench-1k-2k",
     RESULTS / "h200-2026-12-02-configs/bench-1k-2k/bench.json",
     "0001-0024", {(1024, 64), (1024, 128)}),
    ("2026-12-03-sweep/run-d", RUNS / "run-d/bench-t2048-d64/bench.json",
     "0001-0026", {(2048, 64)}),
    ("2026-12-03-sweep/run-a", RUNS / "run-a/bench-t2048-d128/bench.json",
     "0001-0026", {(2048, 128)}),
    ("2026-12-03-sweep/run-a", RUNS / "run-a/bench-d256/bench.json",
     "0001-0026", {(1024, 256)}),
    ("2026-12-03-sweep/run-b", RUNS / "run-b/bench-t2048-d256/bench.json",
     "0001-0026", {(2048, 256)}),
    ("2026-12-02-configs/bench-t4096",
     RESULTS / "h200-2026-12-02-configs/bench-t4096/bench.json",
     "0001-0024", {(4096, 64), (4096, 128)}),
    ("2026-12-02-final/run2",
     RESULTS / "h200-2026-12-02-final/run2/bench-4096/bench.json",
     "0001-0026", {(4096, 256)}),
    ("2026-12-02-smem-bound/run3",
     RESULTS / "h200-2026-12-02-smem-bound/run3/bench-8k/bench.json",
     "0001-0025", {(8192, 64), (8192, 128)}),
    ("2026-12-03-sweep/run-b", RUNS / "run-b/bench-t8192-d256/bench.json",
     "0001-0026", {(8192, 256)}),
    ("2026-12-03-sweep/run-a", RUNS / "run-a/bench-t16384/bench.json",
     "0001-0026", {(16384, 64), (16384, 128, "mha")}),
    ("2026-12-03-sweep/run-b",
     RUNS / "run-b/bench-t16384-d128-gqa/bench.json",
     "0001-0026", {(16384, 128, "gqa")}),
    ("2026-12-02-final/run2",
     RESULTS / "h200-2026-12-02-final/run2/bench-16384/bench.json",
     "0001-0026", {(16384, 256)}),
    ("2026-12-02-derivative/run3",
     RESULTS / "h200-2026-12-02-derivative/run3/bench-32k/bench.json",
     "0001-0025", {(32768, 64), (32768, 128)}),
    ("2026-12-03-sweep/run-c", RUNS / "run-c/bench-t32768/bench.json",
     "0001-0026", {(32768, 256)}),
]
IMPLEMENTATIONS = ("ours", "ours-nocap", "mosaic", "xla")


def main():
  results, sources = [], []
  for label, path, patches, groups in SOURCES:
    data = json.loads(path.read_text())
    for row in data["results"]:
      key = (row["seq_len"], row["head_dim"])
      if key not in groups and key + (row["heads"],) not in groups:
        continue
      results.append(bench.Result(**row))
      if row["implementation"] == "ours":
        sources.append(dict(
            shape=row["shape"], source=label, patches=patches,
            date=data["environment"]["date"],
        ))
  seen = {}
  for r in results:
    seen.setdefault(r.shape, set()).add(r.implementation)
  want = {(t, d, h, m) for t in bench.SEQ_LENS for d in bench.HEAD_DIMS
          for h in bench.HEADS for m in ("causal", "full")}
  got = {(r.seq_len, r.head_dim, r.heads, r.mask) for r in results}
  assert got == want, sorted(want ^ got)
  assert all(v == set(IMPLEMENTATIONS) for v in seen.values()), seen
  assert len(results) == len(want) * len(IMPLEMENTATIONS)
  order = {n: i for i, n in enumerate(IMPLEMENTATIONS)}
  results.sort(key=lambda r: (r.head_dim, r.seq_len, r.heads != "mha",
                              r.mask, order[r.implementation]))
  environment = dict(
      dates="2026-12-02 to 2026-12-03",
      device="gpu: NVIDIA H200",
      python="3.12.3", jax="0.11.2", tokamax="0.0.17", timing="cupti",
      sources="sources.csv",
  )
  bench.write_report(SWEEP, environment, results)
  sources.sort(key=lambda s: [r.shape for r in results].index(s["shape"]))
  with open(SWEEP / "sources.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(sources[0]))
    writer.writeheader()
    writer.writerows(sources)
  print(f"{len(results)} results, {len(sources)} shapes")


if __name__ == "__main__":
  main()
