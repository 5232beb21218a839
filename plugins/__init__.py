"""lfabench's built-in plugins (installed as the ``lfabench_plugins`` package).

Each module is one plugin family member, registered through lfabench's own
``[project.entry-points.lfabench]`` table, exactly as a third-party package would.
Modules here import only lfabench's public core (``lfabench``, ``lfabench.aggregate``,
``lfabench.dataset``, ``lfabench.describe``, ``lfabench.evaluate``...).
"""
