"""`python -m tokamax_softcap {verify,bench,patch}` (or `tokamax-softcap`).

  verify  gradient errors of the soft-capped kernels vs an fp32 reference
  bench   time and memory vs tokamax's other attention implementations (GPU)
  patch   the kernels' source: the upstream patch series (`patches/`)

Without a GPU, `verify` and the tests run the kernels in the Pallas
interpreter at reduced sizes; GPU use: README, "On a GPU".
"""

import argparse
import datetime
import pathlib
import platform
import sys

from absl import logging as absl_logging
import jax
import tokamax
import tokamax_softcap
from tokamax_softcap import bench
from tokamax_softcap import harness
from tokamax_softcap import interpret
from tokamax_softcap import patched
from tokamax_softcap import upstream_tree
from tokamax_softcap import verify


class _Formatter(argparse.RawDescriptionHelpFormatter):
  """Keeps descriptions' line breaks; shows defaults other than None/False."""

  def _get_help_string(self, action):
    if action.default in (None, False, argparse.SUPPRESS):
      return action.help
    return f"{action.help} (default: %(default)s)"


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
  """Returns an argparse type: comma-separated items of `choices`."""

  def parse(value):
    items = value.split(",")
    if unknown := [i for i in items if i not in choices]:
      raise argparse.ArgumentTypeError(
          f"unknown {unknown}; choose from {', '.join(choices)}"
      )
    return items

  return parse


def _ints(value: str) -> list[int]:
  try:
    return [int(x) for x in value.split(",")]
  except ValueError as e:
    raise argparse.ArgumentTypeError(f"not comma-separated integers: {e}")


def _verify(args: argparse.Namespace) -> int:
  """Runs `verify`; returns the exit code (1 if any row failed, 2 if none)."""
  interpreted = interpret.is_needed()
  size = args.size
  if size == "auto":
    size = "cpu" if interpreted else "full"
  overrides = dict(batch=args.batch, seq_len=args.seq_len, window=args.window)
  overrides.update(num_heads=args.heads, num_kv_heads=args.kv_heads)
  overrides.update(head_dim=args.head_dim, logits_soft_cap=args.cap)
  configs = verify.sized_configs(args.config, size, **overrides)
  if interpreted:
    print(
        f"verify: no GPU: the Pallas interpreter runs the kernels ({size}"
        " sizes).",
        file=sys.stderr,
    )
  with interpret.if_needed():
    return verify.main(
        configs,
        args.variants,
        args.dtype,
        args.logit_std,
        json_path=args.json,
        environment=_environment(),
    )


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
  impls = args.impls
  if args.dry_run:
    # It exercises this package's code; Mosaic GPU's kernels are left out.
    shapes, reps = bench.dry_run_shapes(), 2
    impls = [n for n in impls if n != "mosaic"]
  elif args.reps < bench.MIN_REPS:
    print(f"bench: --reps must be at least {bench.MIN_REPS}.", file=sys.stderr)
    return 2
  else:
    shapes = bench.sweep(args.seq_lens, args.head_dims, args.heads, args.masks)
    reps = args.reps
  with interpret.if_needed():
    return bench.main(
        shapes,
        impls,
        reps=reps,
        input_sets=args.input_sets,
        out=pathlib.Path(args.out),
        environment=_environment(),
    )


def _patch(args: argparse.Namespace) -> int:
  """Runs `patch ACTION`; returns the exit code."""
  return upstream_tree.main(
      args.action,
      getattr(args, "argument", None),
      getattr(args, "pytest_args", ()),
  )


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="tokamax-softcap", description=__doc__, formatter_class=_Formatter
  )
  commands = parser.add_subparsers(dest="command", required=True)

  def add(name, module, help_):
    return commands.add_parser(
        name, help=help_, description=module.__doc__, formatter_class=_Formatter
    )

  def csv_of(choices):
    return dict(type=_csv(list(choices)), default=",".join(choices))

  v = add(
      "verify",
      verify,
      "gradient errors vs an fp32 reference (exit 1 on failure)",
  )
  v.set_defaults(run=_verify)
  v.add_argument("--config", **csv_of(harness.CONFIGS), help="configurations")
  v.add_argument("--variants", **csv_of(harness.VARIANTS), help="mask variants")
  v.add_argument("--dtype", **csv_of(verify.DTYPES), help="input dtypes")
  v.add_argument(
      "--size",
      choices=("auto", "full", "cpu"),
      default="auto",
      help="full, or reduced for the CPU interpreter (auto: by device)",
  )
  for flag, what in (
      ("--batch", "batch size"),
      ("--seq-len", "sequence length"),
      ("--heads", "query heads"),
      ("--kv-heads", "key/value heads"),
      ("--head-dim", "head dim"),
      ("--window", "sliding window of the window variant"),
  ):
    v.add_argument(flag, type=int, help=f"override the {what}")
  v.add_argument("--cap", type=float, help="override logits_soft_cap")
  v.add_argument(
      "--logit-std",
      type=float,
      help="std of the pre-cap logits (default: the cap)",
  )
  v.add_argument(
      "--json",
      metavar="FILE",
      help="also write the results as"
      " JSON ('-': to stdout, instead of the table)",
  )

  b = add("bench", bench, "time and memory vs the other implementations (GPU)")
  b.set_defaults(run=_bench)
  b.add_argument(
      "--seq-lens",
      type=_ints,
      default=",".join(map(str, bench.SEQ_LENS)),
      help="sequence lengths T (batch: max(1,"
      f" {bench.TOKENS_PER_CALL} // T))",
  )
  b.add_argument(
      "--head-dims",
      type=_ints,
      default=",".join(map(str, bench.HEAD_DIMS)),
      help="head dims D",
  )
  layouts = ", ".join(f"{k} {q}/{kv}" for k, (q, kv) in bench.HEADS.items())
  b.add_argument(
      "--heads",
      **csv_of(bench.HEADS),
      help=f"query/kv head layouts ({layouts})",
  )
  b.add_argument(
      "--masks",
      type=_csv(bench.MASKS),
      default="causal,full",
      help=f"masks, of {','.join(bench.MASKS)}",
  )
  b.add_argument(
      "--impls",
      **csv_of(bench.IMPLEMENTATIONS),
      help="implementations (those the device lacks are skipped,"
      " with a message)",
  )
  b.add_argument(
      "--reps", type=int, default=20, help=f"timed rounds (>= {bench.MIN_REPS})"
  )
  b.add_argument(
      "--input-sets",
      type=int,
      default=4,
      help="input sets, one call each a round",
  )
  b.add_argument(
      "--out",
      default="bench",
      help="output directory, for bench.{json,csv,md,png}",
  )
  b.add_argument(
      "--dry-run",
      action="store_true",
      help="tiny sizes, 2 rounds,"
      " every implementation the device has (on a CPU: in the"
      " Pallas interpreter); numbers meaningless",
  )

  p = add(
      "patch",
      upstream_tree,
      "the kernels' source: tree, export, check or show the series",
  )
  p.set_defaults(run=_patch)
  actions = p.add_subparsers(dest="action", required=True)
  actions.add_parser(
      "check",
      help="git am the series in a temporary tree,"
      " compare with the package, run upstream's tests of it",
  ).add_argument(
      "pytest_args", nargs="*", help="more pytest arguments (after --)"
  )
  actions.add_parser(
      "tree", help="build a tree with the series applied, to edit"
  ).add_argument(
      "argument", metavar="DIR", type=pathlib.Path, help="directory to create"
  )
  actions.add_parser(
      "export", help="format-patch a tree's commits into the series"
  ).add_argument(
      "argument",
      metavar="DIR",
      type=pathlib.Path,
      help="a tree made by `patch tree`",
  )
  actions.add_parser(
      "show", help="print the patched source of a module, as it runs"
  ).add_argument(
      "argument",
      metavar="MODULE",
      choices=patched.MODULES,
      help=", ".join(patched.MODULES),
  )
  return parser


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  # tokamax logs an "autotuning cache miss" warning per op and shape, then
  # uses its heuristics: noise in a command's output.
  absl_logging.set_verbosity(absl_logging.ERROR)
  return args.run(args)
