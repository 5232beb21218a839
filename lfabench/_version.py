"""lfabench's version, for records and cache keys (a module of its own so low layers need not import the package)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("lfabench")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
