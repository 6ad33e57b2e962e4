"""pytest plugin: runs every test in Pallas interpret mode where there is no GPU.

Enable it with `pytest -p tokamax_softcap.pytest_plugin` (as `patch check`
does for upstream's own tests) or `pytest_plugins` in a `conftest.py` (as this
repository's tests do). See `tokamax_softcap.interpret`.
"""

import pytest
from tokamax_softcap import interpret


@pytest.fixture(autouse=True)
def _interpret_without_gpu():
  with interpret.if_needed():
    yield
