"""Command line: `python -m tokamax_softcap {verify,patch}` (or `tokamax-softcap`).

verify: gradient errors of the soft-capped kernels vs an fp32 reference.
patch: build, export or check the upstream patch series (`patches/`).
"""

import argparse
import contextlib
import dataclasses
import datetime
import json
import pathlib
import platform
import sys
import tempfile

import jax
import tokamax
import tqdm
import tokamax_softcap
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
      help="comma-separated mask variants (default: all)",
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
  return args.run(args)
