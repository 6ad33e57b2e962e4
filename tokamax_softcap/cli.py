"""Command line: `python -m tokamax_softcap {verify,patch}` (or `tokamax-softcap`)."""

import argparse
import contextlib
import dataclasses
import datetime
import json
import platform
import sys

import jax
import tokamax
import tqdm
import tokamax_softcap
from tokamax_softcap import interpret
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
  size = args.size if args.size != "auto" else ("cpu" if interpreted else "full")
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
    with open(args.json, "w") if args.json != "-" else contextlib.nullcontext(
        sys.stdout
    ) as f:
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
      "--json", metavar="FILE", help="also write the results as JSON ('-': stdout)"
  )
  v.set_defaults(run=_verify)
  return parser


def main(argv: list[str] | None = None) -> int:
  args = _parser().parse_args(argv)
  return args.run(args)
