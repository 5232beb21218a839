"""lfabench-gempool: generalised-mean pooling as an lfabench aggregator plugin (an example package)."""

from .plugin import GeMPool

__all__ = ["GeMPool"]
