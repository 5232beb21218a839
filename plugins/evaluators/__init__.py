"""Built-in evaluator plugins and their private helpers."""
