"""lfabench's release version, stated here once: ``pyproject.toml`` reads it for the distribution, records and cache
keys use it (a module of its own so low layers need not import the package)."""

__version__ = "0.2.0"
