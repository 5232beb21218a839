"""Peak memory of the descriptor stage with one large JPEG, without and with a pixel cap.

Eight 320 x 240 JPEGs and one 2500 x 2500 JPEG (textured, like a photograph), described by
``sift`` (defaults: 90 keypoints) in this process (``n_jobs=1``, no cache). Each setting runs in its
own fresh Python process and reports the peak resident memory sampled every 20 ms while
``describe`` ran (``lfabench.record``'s stage sampler: what a run record calls
``peak_rss_mb_by_stage["descriptors"]``):

* ``small only``: the eight small images;
* ``no cap``: all nine, ``max_image_pixels=None`` (what lfabench did before it had a cap);
* ``default cap``: all nine, the default 40 MP cap (the 6.25 MP image is under it: decoded);
* ``cap 4 MP, skip``: all nine, ``max_image_pixels=4_000_000`` and ``skip_corrupt_images=True``: the
  large image is refused from its header, before decoding, and becomes an empty sample.

It also times the header read that enforces the cap (Pillow, no pixel decoded) against OpenCV's full
decode of the same small JPEGs, alternating, in this process.

Usage::

    .venv/bin/python benchmarks/image_pixel_cap.py [--descriptor sift] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SETTINGS = {"small only": (False, "default"), "no cap": (True, None), "default cap": (True, "default"),
            "cap 4 MP, skip": (True, 4_000_000)}

CHILD = r"""
import json, sys, warnings
import numpy as np
from pathlib import Path
from lfabench import get_plugin
from lfabench.dataset import Dataset
from lfabench.images import DEFAULT_MAX_IMAGE_PIXELS
from lfabench.record import _RssSampler
folder, descriptor, big, cap = sys.argv[1], sys.argv[2], sys.argv[3] == "1", json.loads(sys.argv[4])
paths = sorted(Path(folder).glob("small*.jpg")) + ([Path(folder) / "big.jpg"] if big else [])
cap = DEFAULT_MAX_IMAGE_PIXELS if cap == "default" else cap
ds = Dataset(name="bench", task="classification", sample_ids=[p.name for p in paths],
             labels=np.arange(len(paths)) % 2, images=paths, max_image_pixels=cap,
             skip_corrupt_images=isinstance(cap, int) and cap < DEFAULT_MAX_IMAGE_PIXELS)
d = get_plugin("descriptor", descriptor)()
sampler = _RssSampler(); sampler.start()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    bags = d.describe(ds, n_jobs=1, cache=False, progress=False)
print(json.dumps({"peak_mib": sampler.stop(), "n_descriptors": int(bags.n_descriptors)}))
"""


def _textured(rng, h, w):
    """Random 8-pixel blobs, smoothly upsampled: corners and edges at every scale SIFT looks at."""
    import cv2
    import numpy as np

    base = rng.integers(0, 256, size=(h // 8 + 1, w // 8 + 1), dtype=np.uint8)
    return cv2.resize(base, (w, h), interpolation=cv2.INTER_CUBIC)


def _time_header_read(paths, repeats: int) -> None:
    import time

    import cv2
    import numpy as np

    from lfabench.images import header_size

    datas = [p.read_bytes() for p in paths] * 25
    for _ in range(repeats):
        t0 = time.perf_counter()
        for d in datas:
            header_size(d)
        t1 = time.perf_counter()
        for d in datas:
            cv2.imdecode(np.frombuffer(d, np.uint8), cv2.IMREAD_UNCHANGED)
        t2 = time.perf_counter()
        print(f"320 x 240 JPEG: header read {1e3 * (t1 - t0) / len(datas):.3f} ms, "
              f"full decode {1e3 * (t2 - t1) / len(datas):.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--descriptor", default="sift")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        for i in range(8):
            cv2.imwrite(f"{folder}/small{i}.jpg", _textured(rng, 240, 320))
        cv2.imwrite(f"{folder}/big.jpg", _textured(rng, 2500, 2500))
        rows = {name: [] for name in SETTINGS}
        for _ in range(args.repeats):  # alternate the settings: the machine's load varies
            for name, (big, cap) in SETTINGS.items():
                out = subprocess.run([sys.executable, "-c", CHILD, folder, args.descriptor, "1" if big else "0",
                                      json.dumps(cap)], capture_output=True, text=True, check=True)
                rows[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
        _time_header_read(sorted(Path(folder).glob("small*.jpg")), args.repeats)
    print(f"descriptor stage, {args.descriptor}, peak RSS (MiB) over {args.repeats} fresh processes each")
    for name, runs in rows.items():
        peaks = ", ".join(f"{r['peak_mib']:.0f}" for r in runs)
        print(f"  {name:<16} {peaks}   descriptors: {runs[0]['n_descriptors']}")


if __name__ == "__main__":
    main()
