"""``lfabench explain``: the image patches behind a fitted run's prototypes, most-weighted first.

The paper's interpretability claim for ProLFA is that each output dimension is a prototype made of
a few real training descriptors (column ``p`` of the selection ``C``, eq. "ModelRelax2"), so one can
look at where they come from. A run of such an aggregator keeps ``prototypes.npz`` beside its
record (:mod:`lfabench.prototypes`: for every non-zero ``C[row, p]``, the dataset sample, the
descriptor's position in it and its keypoint). This module

1. reads the record and that file (:func:`load_explained_run`, clear errors for a failed run, an
   aggregator without prototypes, a run older than the file, a dataset whose images are absent or
   differ from the run's);
2. takes the ``top`` prototypes by ``prototype_weight`` (for ProLFA ``||W[p, :]||_2``; the record's
   ``prototypes.weight`` says which), and for each the ``per_prototype`` descriptors of largest
   coefficient;
3. crops each descriptor's image region (:func:`crop_keypoint`): an axis-aligned square of side
   ``extent x scale`` pixels centred on the keypoint ``(x, y)`` (pixel centres at integer
   coordinates, as OpenCV), orientation and affine shape ignored; ``extent`` is what the descriptor
   plugin declares (``Descriptor.keypoint_extent``: 1 for ``patches``, whose tile is then exactly the
   patch; 12 for SIFT's 4 x 4 cells of 3 sigma) unless given;
4. draws them as a PNG grid (:func:`render_grid`): one row per prototype, tiles labelled with the
   image id, its class and the coefficient.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import CorruptImageError, Dataset
from .boardfiles import BoardFileError, inside
from .prototypes import load_prototypes
from .record import RESULT_FILE, read_record
from .registry import get_registry
from .storage import atomic_write


class ExplainError(ValueError):
    """A run that cannot be explained, and why (the message names the run and what to do)."""


@dataclass
class Tile:
    """One descriptor's image region: ``image`` ``(h, w)`` or ``(h, w, 3)`` float (NaN outside the image)."""

    image: np.ndarray
    sample_id: str
    class_name: str
    coefficient: float
    keypoint: dict[str, float]
    value_range: tuple[float, float]
    source: np.ndarray | None = None          # the whole source image (float), for ``context``
    box: tuple[int, int, int] = (0, 0, 0)     # the crop in it: (x0, y0, side) in pixels


@dataclass
class PrototypeRow:
    """One prototype of the grid: its index (output dimension), weight and tiles (largest coefficient first)."""

    prototype: int
    weight: float
    rank: int
    n_support: int
    tiles: list[Tile] = field(default_factory=list)


def _record_path(run: Path | str) -> Path:
    path = Path(run)
    return path if path.name == RESULT_FILE or path.suffix == ".json" else path / RESULT_FILE


def load_explained_run(run: Path | str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(record, prototype arrays)`` of the run in folder ``run`` (or its ``result.json``); ExplainError if
    it cannot be explained."""
    path = _record_path(run)
    if not path.is_file():
        raise ExplainError(f"{path}: no run record here; give a run directory of `lfabench run` "
                           f"(lfabench_runs/<names>/<key>_s<seed>/) or its result.json")
    try:
        record = read_record(path)
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    aggregator = ((record.get("config") or {}).get("aggregator") or {}).get("name", "?")
    if record["status"] != "ok":
        err = record.get("error") or {}
        raise ExplainError(f"{path}: the run did not finish (status {record['status']!r}"
                           + (f", {err.get('type')} at stage {err.get('stage')}: {err.get('message')}" if err else "")
                           + "); explain needs a finished run: fix the cause and run it again")
    info = record.get("prototypes")
    if not info:
        if aggregator in ("prolfa", "semi_prolfa"):
            raise ExplainError(f"{path}: this {aggregator} run kept no prototypes.npz (it ran on an lfabench "
                               f"before `explain`); rerun it with the same command and force=true")
        raise ExplainError(f"{path}: aggregator {aggregator!r} selects no prototypes; explain works on runs of "
                           f"aggregators that state them (prolfa, semi_prolfa)")
    try:
        npz = inside(path.parent, info.get("file"), "prototypes.file")
    except BoardFileError as exc:
        raise ExplainError(str(exc)) from None
    if not npz.is_file():
        raise ExplainError(f"{npz}: the record says the run kept its prototypes here, but the file is missing; "
                           f"rerun the run with force=true")
    try:
        arrays = load_prototypes(npz)
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    return record, arrays


def load_run_dataset(record: dict[str, Any], source: str = "run") -> Dataset:
    """The run's dataset, rebuilt from its config, with images, and the same content (fingerprint) as the run's."""
    cfg = (record.get("config") or {}).get("dataset") or {}
    name = cfg.get("name", "?")
    spec = get_registry().get_spec("dataset", name)
    try:
        dataset = spec.factory(**dict(cfg.get("params") or {}))
    except FileNotFoundError as exc:
        raise ExplainError(f"{source}: the images of dataset {name!r} are missing: {exc}") from None
    if dataset.images is None:
        raise ExplainError(f"{source}: dataset {name!r} ships local descriptors, not images, so there are no "
                           f"image patches to show")
    expected = (record.get("dataset") or {}).get("fingerprint")
    try:
        found = dataset.fingerprint()  # reads every image file once
    except (OSError, CorruptImageError) as exc:
        raise ExplainError(f"{source}: an image of dataset {name!r} is missing or unreadable: {exc}") from None
    if expected and found != expected:
        raise ExplainError(f"{source}: dataset {name!r} found here differs from the one the run used "
                           f"(fingerprint {found[:12]} != {expected[:12]}); the patches would "
                           f"come from other images")
    return dataset


def descriptor_extent(record: dict[str, Any]) -> float | None:
    """The run's descriptor plugin's ``keypoint_extent`` (None when it declares none)."""
    name = ((record.get("config") or {}).get("descriptor") or {}).get("name", "")
    try:
        factory = get_registry().get_spec("descriptor", name).factory
    except LookupError:  # an uninstalled plugin (UnknownPluginError): the caller asks for --extent
        return None
    extent = getattr(factory, "keypoint_extent", None)
    return float(extent) if extent else None


def as_float_image(image: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """``(image as float64, (low, high))``: 8/16-bit images scaled to [0, 1]; floats kept with their own range."""
    img = np.asarray(image)
    if img.dtype.kind in "ui":
        top = 255.0 if img.dtype.itemsize == 1 else float(np.iinfo(img.dtype).max)
        return img.astype(np.float64) / top, (0.0, 1.0)
    img = img.astype(np.float64)
    low, high = (float(np.nanmin(img)), float(np.nanmax(img))) if img.size else (0.0, 1.0)
    return img, (low, high if high > low else low + 1.0)


def crop_box(x: float, y: float, side: float) -> tuple[int, int, int]:
    """``(x0, y0, w)``: first column and row and side of :func:`crop_keypoint`'s square."""
    w = max(1, round(side))
    return round(x - (w - 1) / 2), round(y - (w - 1) / 2), w


def crop_keypoint(image: np.ndarray, x: float, y: float, side: float) -> np.ndarray:
    """The axis-aligned square of ``side`` pixels centred on ``(x, y)`` (pixel centres at integers).

    Columns ``x0 .. x0 + w - 1`` with ``w = max(1, round(side))`` and ``x0 = round(x - (w - 1) / 2)``
    (rows alike): a ``patches`` keypoint (centre ``c + (p - 1) / 2``, scale ``p``) gives back exactly its
    ``p x p`` patch. Pixels outside the image are NaN. Returns ``(w, w)`` or ``(w, w, channels)`` float.
    """
    img = np.asarray(image, dtype=np.float64)
    x0, y0, w = crop_box(x, y, side)
    out = np.full((w, w) + img.shape[2:], np.nan)
    H, W = img.shape[:2]
    ys, xs = slice(max(y0, 0), min(y0 + w, H)), slice(max(x0, 0), min(x0 + w, W))
    if ys.start < ys.stop and xs.start < xs.stop:
        out[ys.start - y0:ys.stop - y0, xs.start - x0:xs.stop - x0] = img[ys, xs]
    return out


def explain_rows(record: dict[str, Any], arrays: dict[str, np.ndarray], dataset: Dataset, top: int = 8,
                 per_prototype: int = 4, extent: float | None = None, source: str = "run") -> list[PrototypeRow]:
    """The ``top`` prototypes by weight (largest first, ties by index), each with the tiles of its
    ``per_prototype`` largest-coefficient descriptors."""
    if int(top) < 1 or int(per_prototype) < 1:
        raise ExplainError(f"top and per_prototype must be >= 1, got {top} and {per_prototype}")
    fields = [str(f) for f in arrays["keypoint_fields"]]
    if "x" not in fields or "y" not in fields:
        raise ExplainError(f"{source}: the descriptors kept no keypoint positions (fields {fields}); "
                           f"there is nothing to crop")
    if extent is None:
        extent = descriptor_extent(record)
        if extent is None:
            raise ExplainError(f"{source}: descriptor {record['config']['descriptor']['name']!r} declares no "
                               f"keypoint_extent; pass --extent (crop side in units of the keypoint's scale)")
    if not float(extent) > 0:
        raise ExplainError(f"extent must be > 0, got {extent}")
    K = arrays["keypoints"]
    col = {f: i for i, f in enumerate(fields)}
    weight = arrays["prototype_weight"]
    order = np.lexsort((np.arange(weight.size), -weight))[: int(top)]
    labels, names = dataset.labels, list(dataset.class_names or [])
    images: dict[int, tuple[np.ndarray, tuple[float, float]]] = {}
    rows = []
    for rank, p in enumerate(order, start=1):
        entries = np.flatnonzero(arrays["prototype"] == p)  # already by decreasing coefficient
        row = PrototypeRow(prototype=int(p), weight=float(weight[p]), rank=rank, n_support=int(entries.size))
        for e in entries[: int(per_prototype)]:
            s = int(arrays["sample"][e])
            if s not in images:
                images[s] = as_float_image(dataset.load_image(s))
            img, value_range = images[s]
            kp = {f: float(K[e, i]) for f, i in col.items()}
            side = float(extent) * kp.get("scale", 1.0)
            if labels is None:
                cls = "-"
            else:
                lab = labels[s]
                cls = names[int(lab)] if names and np.issubdtype(np.asarray(lab).dtype, np.integer) \
                    and 0 <= int(lab) < len(names) else str(lab)
            row.tiles.append(Tile(crop_keypoint(img, kp["x"], kp["y"], side), str(dataset.sample_ids[s]), cls,
                                  float(arrays["coefficient"][e]), kp, value_range, img,
                                  crop_box(kp["x"], kp["y"], side)))
        rows.append(row)
    return rows


def render_grid(rows: list[PrototypeRow], path: Path | str, title: str = "", context: bool = False) -> Path:
    """Write the grid as a PNG: one row per prototype (rank, index, weight), one tile per descriptor.

    ``context``: draw each tile's whole source image with the crop outlined (red) instead of the crop.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.patches
    import matplotlib.pyplot as plt

    ncols = max(1, max((len(r.tiles) for r in rows), default=1))
    fig, axes = plt.subplots(len(rows), ncols, figsize=(1.9 * ncols + 1.2, 2.1 * len(rows) + 0.8), squeeze=False)
    cmap = matplotlib.colormaps["gray"].with_extremes(bad="#f4c7c3")  # outside the image: pale red
    for r, row in enumerate(rows):
        for c in range(ncols):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c >= len(row.tiles):
                ax.axis("off")
                continue
            t = row.tiles[c]
            low, high = t.value_range
            shown = t.source if context and t.source is not None else t.image
            if shown.ndim == 2:
                ax.imshow(shown, cmap=cmap, vmin=low, vmax=high, interpolation="nearest")
            else:
                rgb = np.clip((shown[..., :3] - low) / (high - low), 0, 1)
                ax.imshow(np.where(np.isnan(rgb), 0.85, rgb), interpolation="nearest")
            if context and t.source is not None:
                x0, y0, w = t.box
                ax.add_patch(matplotlib.patches.Rectangle((x0 - 0.5, y0 - 0.5), w, w, fill=False, edgecolor="red",
                                                          linewidth=1.2))
            ax.set_title(f"{t.sample_id}\nclass {t.class_name} · c={t.coefficient:.2f}", fontsize=7)
        axes[r, 0].set_ylabel(f"#{row.rank}: prototype {row.prototype}\nweight {row.weight:.3g}\n"
                              f"{row.n_support} descriptor(s)", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    return path


def explain_run(run: Path | str, out: Path | str | None = None, top: int = 8, per_prototype: int = 4,
                extent: float | None = None, context: bool = False) -> tuple[Path, list[PrototypeRow]]:
    """Read run ``run``, draw its ``top`` prototypes' patches to ``out`` (default ``<run>/explain.png``)."""
    record, arrays = load_explained_run(run)
    source = str(_record_path(run))
    dataset = load_run_dataset(record, source)
    rows = explain_rows(record, arrays, dataset, top, per_prototype, extent, source)
    cfg = record["config"]
    info = record["prototypes"]
    title = (f"{cfg['aggregator']['name']} on {cfg['dataset']['name']} / {cfg['descriptor']['name']}, seed "
             f"{record['seed']}: top {len(rows)} of {info['n_prototypes']} prototypes by weight = {info['weight']}")
    out = Path(out) if out is not None else _record_path(run).parent / "explain.png"
    return render_grid(rows, out, "\n".join(_wrap(title, 110)), context), rows


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width)
