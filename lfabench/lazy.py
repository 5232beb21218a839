"""A module imported on its first attribute access: for libraries that cost much at start-up.

``sp = LazyModule("scipy.sparse")`` at the top of a module reads as ``import scipy.sparse as sp`` and
imports nothing until ``sp.csr_matrix`` (or any other attribute) is first used: ``scipy.sparse`` costs a
third of a second of CPU, which every command and every run of a sweep would pay at start-up while
registering the plugins that use it. Annotations naming ``sp.csr_matrix`` stay free under
``from __future__ import annotations``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["LazyModule"]


class LazyModule:
    """Stands for the module ``name``; the first attribute read imports it (then the module's own)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str):
        module = self._module
        if module is None:
            module = importlib.import_module(self._name)
            self._module = module
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r}, {'imported' if self._module is not None else 'not imported yet'})"
