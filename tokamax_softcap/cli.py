"""Command line: `python -m tokamax_softcap {verify,patch}` (or `tokamax-softcap`).

verify: gradient errors of the soft-capped kernels vs an fp32 reference.
bench: time and memory vs the other attention implementations (GPU).
patch: build, export or check the upstream patch series (`patches/`).
"""

import argparse
import contextlib
import csv
import dataclasses
import datetime
import json
import pathlib
import platform
import sys
import tempfile

from absl import logging as absl_logging
import jax
import tokamax
import tqdm
import tokamax_softcap
from tokamax_softcap import bench
from tokamax_softcap import interpret
from tokamax_softcap import upstream_tree
from tokamax_softcap import verify


def _environment() -> dict[str, str]:
  device = jax.devices()[0]
  return dict(
      date=datetime.date.today().isoformat(),
      device=f"{device.platform}: {device.device_kind}",
      python=platform.python_version(),
      jax=jax.__version__,
      tokamax=tokamax.__version__,
      tokamax_softcap=tokamax_softcap.__version__,
  )


def _csv(choices):
  def parse(value):
    items = value.split(",")
    if unknown := [i for i in items if i not in choices]:
      raise argparse.ArgumentTypeError(
          f"unknown {unknown}; choose from {', '.join(choices)}"
      )
    return items

  return parse


def _verify(args: argparse.Namespace) -> int:
  """Runs `verify`; returns the exit code (1 if any row failed)."""
  env = _environment()
  interpreted = interpret.is_needed()
  size = (
      args.size if args.size != "auto" else ("cpu" if interpreted else "full")
  )
  configs = []
  for name in args.config:
    config = verify.CONFIGS[name]
    if size == "cpu":
      config = verify.cpu_sized(config)
    overrides = dict(
        batch=args.batch,
        seq_len=args.seq_len,
        num_heads=args.heads,
        num_kv_heads=args.kv_heads,
        head_dim=args.head_dim,
        logits_soft_cap=args.cap,
        window=args.window,
    )
    overrides = {k: v for k, v in overrides.items() if v is not None}
    configs.append(dataclasses.replace(config, **overrides))

  runs = list(verify.runs(configs, args.variants, args.dtype))
  if not runs:
    print(
        "verify: nothing to run: `window` needs `--window` < `--seq-len`,"
        f" `sharded` 2+ devices that can split the batch or kv heads (have"
        f" {jax.device_count()}).",
        file=sys.stderr,
    )
    return 2
  print(
      f"verify: {len(runs)} runs on {env['device']}"
      + (" (Pallas interpret mode, CPU sizes)" if interpreted else ""),
      file=sys.stderr,
  )
  rows = []
  context = interpret.interpret() if interpreted else contextlib.nullcontext()
  with context:
    progress = tqdm.tqdm(runs, file=sys.stderr, unit="run")
    for config, variant, dtype in progress:
      progress.set_description(f"{config.name} {variant} {dtype}")
      rows.append(verify.verify_one(config, variant, dtype, args.logit_std))
      progress.write(verify.table_row(rows[-1]), file=sys.stderr)

  if args.json:
    report = dict(environment=env, rows=[dataclasses.asdict(r) for r in rows])
    with (
        open(args.json, "w")
        if args.json != "-"
        else contextlib.nullcontext(sys.stdout) as f
    ):
      json.dump(report, f, indent=1)
      f.write("\n")
  if args.json != "-":
    print(", ".join(f"{k} {v}" for k, v in env.items()))
    print(verify.table(rows))
    bounds = ", ".join(
        f"{dtype}: " + " ".join(f"{k} {v:g}" for k, v in b.items())
        for dtype, b in verify.BOUNDS.items()
    )
    print(f"Bounds on max|x - ref| / max|ref|: {bounds}.")
    print("Every row also needs max pre-cap |u| >= 3x the cap.")
  failed = sum(not r.passed for r in rows)
  print(f"{len(rows) - failed} passed, {failed} failed", file=sys.stderr)
  return 1 if failed else 0


def _bench(args: argparse.Namespace) -> int:
  """Runs `bench`; returns the exit code."""
  interpreted = interpret.is_needed()
  if interpreted and not args.dry_run:
    print(
        "bench: no GPU, and timings of the CPU interpreter mean nothing."
        " Use --dry-run to exercise the benchmark at tiny sizes.",
        file=sys.stderr,
    )
    return 2
  if args.dry_run:
    shapes = bench.sweep((128,), (32,), ("gqa",), ("causal", "docs-4"))
    shapes = [dataclasses.replace(s, batch=1) for s in shapes]
    impls = [n for n in args.impls if n != "mosaic"]
    reps = 2
  else:
    if args.reps < 20:
      print("bench: --reps must be at least 20.", file=sys.stderr)
      return 2
    shapes = bench.sweep(args.seq_lens, args.head_dims, args.heads, args.masks)
    impls, reps = args.impls, args.reps
  impls = [n for n in impls if bench.supported(n)]
  env = _environment()
  print(
      f"bench: {len(shapes)} shapes x {impls} on {env['device']}",
      file=sys.stderr,
  )
  context = interpret.interpret() if interpreted else contextlib.nullcontext()
  results = []
  with context:
    progress = tqdm.tqdm(total=len(shapes) * len(impls), file=sys.stderr)
    for result in bench.run(
        shapes, impls, reps=reps, input_sets=args.input_sets
    ):
      progress.set_description(f"{result.shape} {result.implementation}")
      progress.update()
      results.append(result)
    progress.close()

  if not results:
    print("bench: nothing to run.", file=sys.stderr)
    return 2
  out = pathlib.Path(args.out)
  out.mkdir(parents=True, exist_ok=True)
  rows = [dataclasses.asdict(r) for r in results]
  (out / "bench.json").write_text(
      json.dumps(dict(environment=env, results=rows), indent=1) + "\n"
  )
  with open(out / "bench.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  text = ", ".join(f"{k} {v}" for k, v in env.items()) + "\n\n"
  text += bench.table(results) + "\n"
  (out / "bench.md").write_text(text)
  bench.plot(results, str(out / "bench.png"))
  print(text)
  print(f"wrote {out}/bench.{{json,csv,md,png}}", file=sys.stderr)
  return 0


def _patch(args: argparse.Namespace) -> int:
  """Runs `patch`; returns the exit code."""
  if args.action == "tree":
    tree = upstream_tree.build(args.dir)
    print(f"{tree}: the tokamax wheel's files (tag {upstream_tree.BASE_TAG}),")
    print("with the series applied by `git am`. Edit and commit there, then")
    print(f"`python -m tokamax_softcap patch export {tree}`.")
    return 0
  if args.action == "export":
    for path in upstream_tree.export(args.dir):
      print(path)
    return 0
  print("\n".join(upstream_tree.check()))
  with tempfile.TemporaryDirectory() as tmp:
    tree = upstream_tree.build(pathlib.Path(tmp) / "tokamax")
    print(
        f"upstream's own tests of the series (-k '{upstream_tree.SERIES_TESTS}'):"
    )
    result = upstream_tree.run_upstream_test(
        tree, "-q", "-k", upstream_tree.SERIES_TESTS, *args.pytest_args
    )
  print(result.stdout[-2000:] + result.stderr[-2000:])
  return result.returncode


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(prog="tokamax-softcap", description=__doc__)
  commands = parser.add_subparsers(dest="command", required=True)

  v = commands.add_parser(
      "verify",
      help="gradient errors vs an fp32 reference (exit 1 on failure)",
      description=verify.__doc__,
      formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  v.add_argument(
      "--config",
      type=_csv(list(verify.CONFIGS)),
      default=list(verify.CONFIGS),
      help="comma-separated configurations (default: all)",
  )
  v.add_argument(
      "--variants",
      type=_csv(verify.VARIANTS),
      default=list(verify.VARIANTS),
      help=(
          "comma-separated mask variants (default: all; `sharded` runs with"
          " 2+ devices only)"
      ),
  )
  v.add_argument(
      "--dtype",
      type=_csv(list(verify.BOUNDS)),
      default=list(verify.BOUNDS),
      help="comma-separated input dtypes (default: bfloat16,float32)",
  )
  v.add_argument(
      "--size",
      choices=("auto", "full", "cpu"),
      default="auto",
      help="full size, or reduced for the CPU interpreter (auto: by device)",
  )
  for flag, help_ in (
      ("--batch", "batch size"),
      ("--seq-len", "sequence length"),
      ("--heads", "query heads"),
      ("--kv-heads", "key/value heads"),
      ("--head-dim", "head dim"),
      ("--window", "sliding window of the window variant"),
  ):
    v.add_argument(flag, type=int, help=f"override the {help_}")
  v.add_argument("--cap", type=float, help="override logits_soft_cap")
  v.add_argument(
      "--logit-std",
      type=float,
      help="std of the pre-cap logits (default: the cap)",
  )
  v.add_argument(
      "--json",
      metavar="FILE",
      help="also write the results as JSON ('-': stdout)",
  )
  v.set_defaults(run=_verify)

  b = commands.add_parser(
      "bench",
      help="time and memory vs the other implementations (GPU)",
      description=bench.__doc__,
      formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  ints = lambda v: [int(x) for x in v.split(",")]
  b.add_argument("--seq-lens", type=ints, default=list(bench.SEQ_LENS))
  b.add_argument("--head-dims", type=ints, default=list(bench.HEAD_DIMS))
  b.add_argument(
      "--heads", type=_csv(list(bench.HEADS)), default=list(bench.HEADS)
  )
  b.add_argument(
      "--masks",
      type=_csv(list(bench.MASKS)),
      default=["causal", "full"],
      help=f"comma-separated, of: {', '.join(bench.MASKS)}"
      " (default: causal,full)",
  )
  b.add_argument(
      "--impls",
      type=_csv(list(bench.IMPLEMENTATIONS)),
      default=list(bench.IMPLEMENTATIONS),
  )
  b.add_argument("--reps", type=int, default=20, help="timed rounds (>= 20)")
  b.add_argument(
      "--input-sets",
      type=int,
      default=4,
      help="input sets, one call each a round",
  )
  b.add_argument("--out", default="bench", help="output directory")
  b.add_argument(
      "--dry-run",
      action="store_true",
      help="tiny sizes, 2 rounds (runs on a CPU; numbers meaningless)",
  )
  b.set_defaults(run=_bench)

  p = commands.add_parser(
      "patch",
      help="build, export or check the upstream patch series",
      description=upstream_tree.__doc__,
      formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  actions = p.add_subparsers(dest="action", required=True)
  c = actions.add_parser(
      "check",
      help="git am the series onto the wheel's files in a temporary tree,"
      " compare with the package, run upstream's tests of it",
  )
  c.add_argument(
      "pytest_args", nargs="*", help="more pytest arguments (after --)"
  )
  actions.add_parser(
      "tree", help="build a tree with the series applied, to edit"
  ).add_argument("dir", type=pathlib.Path, help="directory to create")
  actions.add_parser(
      "export", help="format-patch a tree's commits into the series"
  ).add_argument("dir", type=pathlib.Path, help="a tree made by `patch tree`")
  p.set_defaults(run=_patch)
  return parser


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  # tokamax logs an "autotuning cache miss" warning per op and shape, then
  # uses its heuristics: noise in a command's output.
  absl_logging.set_verbosity(absl_logging.ERROR)
  return args.run(args)
