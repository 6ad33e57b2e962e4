"""Types of the command line's options, for the commands' `add_arguments`."""

import argparse
from collections.abc import Iterable
from typing import Any


def comma_separated(
    choices: Iterable[str], default: Iterable[str] | None = None
) -> dict[str, Any]:
  """Returns `add_argument` keywords of a comma-separated list of `choices`.

  Args:
    choices: The items allowed.
    default: The items by default; all `choices` if `None`.

  Returns:
    `type`, which parses `"a,b"` into `["a", "b"]` and rejects other items
    (naming them and the choices), and `default`, comma-separated (as the
    help shows it; argparse parses it with `type`).
  """
  choices = list(choices)

  def parse(value: str) -> list[str]:
    items = value.split(",")
    if unknown := [i for i in items if i not in choices]:
      raise argparse.ArgumentTypeError(
          f"unknown {unknown}; choose from {', '.join(choices)}"
      )
    return items

  return dict(
      type=parse, default=",".join(choices if default is None else default)
  )


def integers(value: str) -> list[int]:
  """Parses comma-separated integers, e.g. `"1024,2048"`.

  Args:
    value: The option's text.

  Returns:
    The integers.

  Raises:
    argparse.ArgumentTypeError: if an item is not an integer.
  """
  try:
    return [int(x) for x in value.split(",")]
  except ValueError as e:
    raise argparse.ArgumentTypeError(
        f"not comma-separated integers: {e}"
    ) from e
