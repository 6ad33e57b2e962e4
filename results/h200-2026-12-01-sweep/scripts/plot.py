"""One plot of the whole sweep: bench's own plot over every run's results.

Usage (repository root on PYTHONPATH): python3 plot.py OUT.png bench-*/bench.json
"""

import json
import sys

from tokamax_softcap import bench

results = []
for path in sys.argv[2:]:
  for row in json.load(open(path))["results"]:
    # The T4096 and T8192 runs predate the field; the plot does not use it.
    row.setdefault("fwd_flop", 0)
    results.append(bench.Result(**row))
bench.plot(results, sys.argv[1])
