"""Built-in aggregator plugins and their private helpers."""
