"""Short labels for a board's methods, and the legend that gives each one's full settings.

A row's full label (:func:`lfabench.recordset.labelled`) names the plugin and every parameter its
setting changed from the plugin's default: ``prolfa[lambda1=0.1, solver.max_iter=500, ...]`` can run to 70
characters and more, which crowds every table column, plot axis and file name it reaches. On the page a
method is shown by its plugin name alone (``prolfa``); only where one plugin appears on the board with two or
more settings does its label get a short tag: the parameter values that tell those settings apart
(``bow n_clusters=8``) when that is short, else a letter in the order of the full labels (``prolfa (a)``).
The legend maps every short label back to its full label, so nothing is hidden: a footnote in Markdown, a
hover title and a legend table in HTML. The CSV files keep the full labels.

Short labels are fixed per board (the same setting reads alike in every table of one page), and are unique
there: two full labels never share a short one.
"""

from __future__ import annotations

import re
import string

import pandas as pd

#: Longest tag made of parameter values; a longer one is replaced by a letter.
MAX_TAG = 24

_PARAM_SPLIT = re.compile(r", (?=[\w.-]+=)")


def split_label(label: str) -> tuple[str, dict[str, str]]:
    """``bow[n_clusters=8, k=1]`` -> ``("bow", {"n_clusters": "8", "k": "1"})``; a setting id suffix
    (``bow{6461e290d7}``) is kept in the name (it tells settings apart that no parameter does)."""
    label = str(label)
    match = re.fullmatch(r"([^\[]*)\[(.*)\](.*)", label, flags=re.DOTALL)
    if not match:
        return label, {}
    head, inner, tail = match.groups()
    params = dict(p.split("=", 1) for p in _PARAM_SPLIT.split(inner) if "=" in p)
    return head + tail, params


def plugin_name(label: str) -> str:
    """The plugin name of a full label: what precedes its ``[parameters]`` or ``{setting id}``."""
    return re.split(r"[\[{]", str(label), maxsplit=1)[0]


def short_labels(full_labels) -> dict[str, str]:
    """``{full label: short label}`` for every distinct label of ``full_labels`` (module docstring)."""
    labels = sorted({str(lab) for lab in full_labels})
    by_base: dict[str, list[str]] = {}
    for lab in labels:
        by_base.setdefault(plugin_name(lab), []).append(lab)
    out = {}
    for base, group in by_base.items():
        if len(group) == 1:
            out[group[0]] = base
            continue
        parsed = [split_label(lab)[1] for lab in group]
        keys = sorted({k for p in parsed for k in p})
        differ = [k for k in keys if len({p.get(k, "default") for p in parsed}) > 1]
        tags = [" ".join(f"{k.rsplit('.', 1)[-1]}={p.get(k, 'default')}" for k in differ) for p in parsed]
        if not differ or len(set(tags)) < len(tags) or max(map(len, tags)) > MAX_TAG:
            tags = [f"({_letters(i)})" for i in range(len(group))]
        out.update({lab: f"{base} {tag}" for lab, tag in zip(group, tags)})
    return out


def _letters(i: int) -> str:
    """``a, b, ..., z, aa, ab, ...``."""
    letters = string.ascii_lowercase
    return letters[i] if i < len(letters) else _letters(i // len(letters) - 1) + letters[i % len(letters)]


def legend(short: dict[str, str]) -> pd.DataFrame:
    """One row per short label (sorted): ``label`` and ``settings``, the full label or, where the label is the
    plugin's name alone, that it ran with the plugin's defaults."""
    rows = sorted((s, f) for f, s in short.items())
    return pd.DataFrame({"label": [s for s, _ in rows],
                         "settings": [f if f != s else f"{f} (the plugin's defaults)" for s, f in rows]})
