"""pytest plugin: runs every test in Pallas interpret mode where there is no GPU.

Enable it with `pytest -p tokamax_softcap.pytest_plugin` or `pytest_plugins`
in a `conftest.py` (as this repository's tests do). See
`tokamax_softcap.interpret`.

`patch check` runs upstream's tests of a tree of the series with this
directory last on the path and `-p pytest_plugin`: a top-level module that
imports `interpret` beside it, not this package, whose import would apply the
whole series to the tree's tokamax (which fails for a tree of a first part of
the series) and register the package's ops over the tree's.
"""

import pytest

if __package__:
  from tokamax_softcap import interpret
else:
  import interpret  # pylint: disable=g-import-not-at-top


@pytest.fixture(autouse=True)
def _interpret_without_gpu():
  with interpret.if_needed():
    yield
