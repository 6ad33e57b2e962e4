"""`python -m tokamax_softcap {verify,bench,patch}` (or `tokamax-softcap`).

  verify  gradient errors of the soft-capped kernels vs an fp32 reference
  bench   time and memory vs tokamax's other attention implementations (GPU)
  patch   the kernels' source: the upstream patch series (`patches/`)

Without a GPU, `verify` and the tests run the kernels in the Pallas
interpreter at reduced sizes; GPU use: README, "On a GPU". `COMMAND --help`
describes a command and its options.
"""

import argparse
import textwrap

from absl import logging as absl_logging
from tokamax_softcap import bench
from tokamax_softcap import upstream_tree
from tokamax_softcap import verify

# name: (module, summary). A command's module declares its options
# (`add_arguments`), each named (`dest`) as an argument of its `main`, which
# runs it and returns the exit code.
COMMANDS = {
    "verify": (
        verify,
        "gradient errors vs an fp32 reference (exit 1 on failure)",
    ),
    "bench": (bench, "time and memory vs the other implementations (GPU)"),
    "patch": (
        upstream_tree,
        "the kernels' source: tree, export, check or show the series",
    ),
}


class _Formatter(argparse.RawDescriptionHelpFormatter):
  """Keeps docstrings' line breaks and values whole; shows defaults.

  Defaults of None and False (unset options, flags) are not shown.
  """

  def _fill_text(self, text, width, indent):
    if "\n" in text:  # A docstring, laid out already.
      return super()._fill_text(text, width, indent)
    return argparse.HelpFormatter._fill_text(self, text, width, indent)

  def _split_lines(self, text, width):
    # Keeps comma-separated values such as `packed-k-start` whole.
    return textwrap.wrap(
        " ".join(text.split()),
        width,
        break_on_hyphens=False,
        break_long_words=False,
    )

  def _get_help_string(self, action):
    if action.default in (None, False, argparse.SUPPRESS):
      return action.help
    return f"{action.help} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
  """Formats help with `_Formatter`, as do its subcommands' parsers."""

  def __init__(self, **kwargs):
    super().__init__(formatter_class=_Formatter, **kwargs)


def parser() -> argparse.ArgumentParser:
  """Returns the command line's parser.

  Parsing gives a command's options and, as `main`, the function to call
  with them (`COMMANDS`).
  """
  result = _Parser(prog="tokamax-softcap", description=__doc__)
  commands = result.add_subparsers(
      dest="command", required=True, title="commands"
  )
  for name, (module, summary) in COMMANDS.items():
    command = commands.add_parser(
        name, help=summary, description=module.__doc__
    )
    command.set_defaults(main=module.main)
    module.add_arguments(command)
  return result


def main(argv: list[str] | None = None) -> int:
  """Runs the command that `argv` names.

  Args:
    argv: The arguments, without the program's name (default:
      `sys.argv[1:]`).

  Returns:
    The command's exit code.
  """
  args = vars(parser().parse_args(argv))
  del args["command"]
  # tokamax logs an "autotuning cache miss" warning per op and shape, then
  # uses its heuristics: noise in a command's output.
  absl_logging.set_verbosity(absl_logging.ERROR)
  return args.pop("main")(**args)
