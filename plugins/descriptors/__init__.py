"""Built-in descriptor plugins and their private helpers."""
