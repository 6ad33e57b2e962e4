"""tokamax's attention modules with our patch series applied.

The series in `patches/` (`git format-patch` mails against tokamax's
repository) is the only copy of this package's kernel changes. Importing this
module applies every patch of the series, in order, to the installed tokamax's
source of each module of `MODULES` and executes the result as a private module
(`tokamax_softcap.patched.<name>`); the ops in `pallas_triton.py`,
`pallas_triton_vjp.py` and `pallas_mosaic_gpu.py` of this package run that
code. So the package and the upstream pull request cannot drift apart: they
are the same text.

A module defined this way has classes of its own (e.g. its own `Config`); the
ops convert at that boundary, see `op_method`.
"""

from collections.abc import Callable
import contextlib
import dataclasses
import functools
import importlib
import importlib.abc
import importlib.util
import inspect
import linecache
import pathlib
import sys
import types
from typing import Any

import whatthepatch

SERIES_DIR = pathlib.Path(__file__).parent / "patches"
_UPSTREAM_PACKAGE = "tokamax._src.ops.attention"


def series() -> list[pathlib.Path]:
  """Returns the patch files of the series, in `git am` order."""
  return sorted(SERIES_DIR.glob("*.patch"))


def upstream_path(module_name: str) -> str:
  """Returns a module's path in tokamax's repository (as the patches name it).

  Args:
    module_name: A module of `tokamax._src.ops.attention`, e.g.
      `"pallas_triton_vjp"`.
  """
  return f"{_UPSTREAM_PACKAGE}.{module_name}".replace(".", "/") + ".py"


def _diffs(module_name: str) -> list[tuple[str, object]]:
  """Returns `(patch file name, diff)` for each diff of the series to a module."""
  path = upstream_path(module_name)
  return [
      (patch.name, diff)
      for patch in series()
      for diff in whatthepatch.parse_patch(patch.read_text())
      if diff.header is not None and diff.header.new_path == path
  ]


def _apply(diffs, lines: list[str], reverse: bool = False) -> list[str]:
  """Applies `diffs` in order (undoes them in reverse order if `reverse`)."""
  for _, diff in reversed(diffs) if reverse else diffs:
    lines = whatthepatch.apply_diff(diff, lines, reverse=reverse)
  return lines


def patched_source(module_name: str, through: int | None = None) -> str:
  """Returns the installed tokamax's source of a module, with the series applied.

  If the installed source already contains the whole series (it can be undone,
  as in a tree made by `upstream_tree.build`), it is taken as it is. The
  patches after `through` are then undone.

  Args:
    module_name: A module of `tokamax._src.ops.attention`, e.g.
      `"pallas_triton_vjp"`.
    through: The number of the last patch to apply (e.g. `14` for
      `0001`-`0014`, to bisect the series); `None` for the whole series.

  Raises:
    ImportError: if the series neither applies to nor is contained in the
      installed source (i.e. the installed tokamax is not one the series was
      made for).
  """
  upstream = importlib.import_module(f"{_UPSTREAM_PACKAGE}.{module_name}")
  lines = inspect.getsource(upstream).splitlines()
  diffs = _diffs(module_name)
  try:
    lines = _apply(diffs, lines)
  except whatthepatch.exceptions.HunkApplyException as e:
    try:
      _apply(diffs, lines, reverse=True)
    except whatthepatch.exceptions.HunkApplyException:
      raise ImportError(
          f"The series in {SERIES_DIR} does not apply to {upstream.__file__}"
          f" ({e}); this package needs the tokamax 0.0.17 line."
      ) from e
  if through is not None:
    later = [(name, d) for name, d in diffs if int(name[:4]) > through]
    lines = _apply(later, lines, reverse=True)
  return "\n".join(lines) + "\n"


class _SourceLoader(importlib.abc.InspectLoader):
  """Loads a module from source text, keeping it visible to tracebacks."""

  def __init__(self, source: str, filename: str):
    self._source = source
    self._filename = filename

  def get_source(self, fullname: str) -> str:
    del fullname  # Unused.
    return self._source

  def get_code(self, fullname: str) -> types.CodeType:
    del fullname  # Unused.
    lines = self._source.splitlines(keepends=True)
    linecache.cache[self._filename] = (
        len(self._source),
        None,
        lines,
        self._filename,
    )
    return compile(self._source, self._filename, "exec", dont_inherit=True)


def load_source(name: str, source: str, filename: str) -> types.ModuleType:
  """Executes `source` as module `name` (in `sys.modules`) and returns it.

  Args:
    name: The module's name.
    source: Its Python source.
    filename: The name tracebacks and `inspect` show for it.
  """
  loader = _SourceLoader(source, filename)
  spec = importlib.util.spec_from_loader(name, loader, origin=filename)
  module = importlib.util.module_from_spec(spec)
  sys.modules[name] = module
  try:
    loader.exec_module(module)
  except BaseException:
    del sys.modules[name]
    raise
  return module


@contextlib.contextmanager
def _imported_as_upstream(module: types.ModuleType, module_name: str):
  """Within this context, importing tokamax's `module_name` gives `module`."""
  package = importlib.import_module(_UPSTREAM_PACKAGE)
  full_name = f"{_UPSTREAM_PACKAGE}.{module_name}"
  saved = sys.modules[full_name], getattr(package, module_name)
  sys.modules[full_name] = module
  setattr(package, module_name, module)
  try:
    yield
  finally:
    sys.modules[full_name] = saved[0]
    setattr(package, module_name, saved[1])


# The modules the package executes from the series' tree, in load order. The
# series changes each but `pallas_mosaic_gpu`, which is executed so that its op
# runs the patched Mosaic GPU kernels (and tokamax's test modules, which are not
# loaded).
MODULES = (
    "pallas_triton_vjp",
    "pallas_triton",
    "pallas_mosaic_gpu_kernel_sm90",
    "pallas_mosaic_gpu_kernel_sm100",
    "pallas_mosaic_gpu_vjp_kernel_sm90",
    "pallas_mosaic_gpu_vjp",
    "pallas_mosaic_gpu",
)


def load_modules(
    prefix: str, source: Callable[[str], tuple[str, str]]
) -> dict[str, types.ModuleType]:
  """Executes the modules of `MODULES` as `<prefix>.<module_name>`.

  In the order of `MODULES`, each with tokamax's earlier ones resolving to
  the ones loaded (e.g. `pallas_triton`'s import of tokamax's
  `pallas_triton_vjp`), as in tokamax's tree with the series applied.

  Args:
    prefix: The package the modules are named under.
    source: Returns `(source, filename)` for a module name of `MODULES`.

  Returns:
    The modules, by name.
  """
  # Read first: a tokamax module imported while the loaded ones stand in for
  # tokamax's would keep them.
  sources = {name: source(name) for name in MODULES}
  modules = {}
  with contextlib.ExitStack() as stack:
    for name in MODULES:
      modules[name] = load_source(f"{prefix}.{name}", *sources[name])
      stack.enter_context(_imported_as_upstream(modules[name], name))
  return modules


_MODULES = load_modules(
    __name__,
    lambda name: (
        patched_source(name),
        f"<{upstream_path(name)} + {SERIES_DIR.name}/>",
    ),
)
pallas_triton = _MODULES["pallas_triton"]
pallas_triton_vjp = _MODULES["pallas_triton_vjp"]
pallas_mosaic_gpu = _MODULES["pallas_mosaic_gpu"]
pallas_mosaic_gpu_vjp = _MODULES["pallas_mosaic_gpu_vjp"]


def _config_classes() -> dict[type[Any], type[Any]]:
  """Maps tokamax's `Config` of each module of `MODULES` to the loaded one's."""
  classes = {}
  for name, module in _MODULES.items():
    config_cls = getattr(module, "Config", None)
    # Not `pallas_mosaic_gpu`'s, a union of its kernel modules' classes.
    if isinstance(config_cls, type):
      upstream = importlib.import_module(f"{_UPSTREAM_PACKAGE}.{name}")
      classes[upstream.Config] = config_cls
  return classes


_TO_PATCHED = _config_classes()
_TO_UPSTREAM = {v: k for k, v in _TO_PATCHED.items()}


def _convert(config: Any, classes: dict[type[Any], type[Any]]) -> Any:
  """Returns `config` as an instance of `classes[type(config)]` (same fields).

  A value whose type is not a key of `classes` is returned as it is.
  """
  config_cls = classes.get(type(config))
  if config_cls is None:
    return config
  fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
  return config_cls(**fields)


def op_method(method: Callable[..., Any]):
  """Adapts a method of a patched op to an op whose configs are tokamax's.

  A patched module's `Config` is a class of its own, with the same fields as
  tokamax's. The ops of this package keep tokamax's config classes as their
  `config_cls` (so configs from users, heuristics and autotuning caches keep
  working) and convert at the boundary: a `config` argument of tokamax's class
  to the module's that this package loaded (`MODULES` in this module, not
  those of another `load_modules` call), a returned config (or set of
  configs) back. Configs of modules the package does not load (e.g. Mosaic
  GPU's sm80 kernel's) pass as they are.

  Args:
    method: A method of an op class of a patched module.

  Returns:
    The adapted method. Its signature (which tokamax's `Op.bind` reads) is the
    method's own.
  """

  @functools.wraps(method)
  def wrapper(self, *args, **kwargs):
    if "config" in kwargs:
      kwargs["config"] = _convert(kwargs["config"], _TO_PATCHED)
    out = method(self, *args, **kwargs)
    if isinstance(out, set):  # Autotuning configs.
      return {_convert(c, _TO_UPSTREAM) for c in out}
    return _convert(out, _TO_UPSTREAM)

  return wrapper
