"""One-thread contexts (threadpoolctl) for the solver's small products and small candidate searches.

On a 2-core machine, multi-threaded BLAS on ``d x d̄`` blocks and FAISS's threads on a small search cost more than
they share (``docs/prolfa-performance.md``, "Tiny problems"). One controller serves both; threadpoolctl sees only
the libraries loaded when it is built, so it is built again once FAISS has been imported (a fit whose searches are
dense NumPy products never imports it).
"""

from __future__ import annotations

import sys

__all__ = ["one_thread"]

_CONTROLLER = None
_SEES_FAISS = False


def one_thread(user_api: str | None = None):
    """A context limiting the thread pools of ``user_api`` (``"blas"``, ``"openmp"``; None: all) to one thread."""
    global _CONTROLLER, _SEES_FAISS
    faiss_loaded = "faiss" in sys.modules
    if _CONTROLLER is None or (faiss_loaded and not _SEES_FAISS):
        from threadpoolctl import ThreadpoolController

        _CONTROLLER, _SEES_FAISS = ThreadpoolController(), faiss_loaded
    return _CONTROLLER.limit(limits=1, user_api=user_api)
