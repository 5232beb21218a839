"""Query boxes against their images: a box must lie inside its query image.

A box reaching outside the image (``x1 < 0``, ``x2 > width``...) is refused, naming the dataset, the query
and the image size, unless the run asks for clipping (``clip_boxes=true``): the box is then cut to the image
(the descriptors it selects are the same: every keypoint lies in the image) and the run records how many boxes
were clipped. A box entirely outside its image selects nothing and is refused either way. The image size is
read from the file's header (no pixel decoded) or from the array a dataset holds.
"""

from __future__ import annotations

import numpy as np


def image_size(dataset, i: int) -> tuple[int, int] | None:
    """``(width, height)`` of sample ``i``'s image without decoding it; None when the dataset has no image."""
    images = getattr(dataset, "images", None)
    if images is None:
        return None
    image = images[i]
    if isinstance(image, np.ndarray):
        return int(image.shape[1]), int(image.shape[0])
    from PIL import Image

    try:
        with Image.open(image) as im:  # the header only
            return int(im.size[0]), int(im.size[1])
    except Exception:  # noqa: BLE001 - an unreadable image is reported where it is described
        return None


def check_query_boxes(dataset, clip: bool) -> int:
    """The number of query boxes that reach outside their image (clipped when ``clip``); a ``ValueError`` naming
    the dataset, the query and the image size for a box outside its image (always) or reaching out of it
    (unless ``clip``)."""
    gt = dataset.ground_truth
    if gt is None or gt.bboxes is None:
        return 0
    clipped = 0
    for q, box in enumerate(gt.bboxes):
        if box is None:
            continue
        i = int(gt.queries[q])
        size = image_size(dataset, i)
        if size is None:
            continue
        w, h = size
        x1, y1, x2, y2 = (float(v) for v in box)
        where = (f"retrieval: dataset {dataset.name!r}, query {q} ({dataset.sample_ids[i]!r}): box "
                 f"({x1:g}, {y1:g}, {x2:g}, {y2:g})")
        if x2 < 0 or y2 < 0 or x1 > w or y1 > h:
            raise ValueError(f"{where} lies outside its {w} x {h} image: it would select no descriptor")
        if x1 < 0 or y1 < 0 or x2 > w or y2 > h:
            if not clip:
                raise ValueError(f"{where} reaches outside its {w} x {h} image (evaluator.params.clip_boxes=true "
                                 f"cuts such boxes to the image, counted in the record)")
            clipped += 1
    return clipped
