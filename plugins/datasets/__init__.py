"""Built-in dataset plugins and their private helpers."""
