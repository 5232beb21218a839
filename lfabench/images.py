"""Reading one image file, with the checks that keep a bad file from passing or from exhausting memory.

:func:`read_image_file` is the one place lfabench decodes an image file (``Dataset.load_image`` calls
it). Before decoding it refuses, with a :class:`CorruptImageError` naming the file:

* an empty (zero-byte) file;
* a truncated JPEG or PNG (:func:`truncation_problem`: decoders fill a cut file with grey rows and
  report success);
* an image whose header declares more than ``max_pixels`` pixels (:class:`ImageTooLargeError`): a
  decompression bomb, a few hundred KB that would decode to gigabytes. The size is read from the
  header alone by Pillow (``Image.open`` parses the header lazily, no pixel is decoded); a format
  Pillow cannot identify is decoded by OpenCV and its size checked after decoding;
* whatever OpenCV cannot decode (``cv2.imdecode`` returning nothing or raising);
* a path that cannot be read (a folder, no permission); a missing file stays a ``FileNotFoundError``.

``CorruptImageError`` derives from ``OSError``; the run-level ``skip_corrupt_images=true`` turns each of
these into an empty sample counted in the record.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

#: Default cap on the pixels (width x height) of one decoded image: 40 MP, above any camera image of the
#: benchmark's datasets (Oxford's largest is 1024 x 768) and far below what exhausts a worker's memory.
DEFAULT_MAX_IMAGE_PIXELS = 40_000_000


class CorruptImageError(OSError):
    """An image file is empty, truncated or cannot be decoded (the message names the file and the sample)."""


class ImageTooLargeError(CorruptImageError):
    """An image file declares more pixels than the cap (``max_image_pixels``)."""


def truncation_problem(data: bytes) -> str | None:
    """Why the encoded image ``data`` is empty or cut short, or ``None``.

    A JPEG must end its last scan with the end-of-image marker (``FF D9`` after the last
    start-of-scan ``FF DA``; neither can occur inside entropy-coded data, and a thumbnail's
    end marker comes before the main image's scan). A PNG must end with its ``IEND`` chunk.
    Other formats are left to the decoder.
    """
    if not data:
        return "an empty file (0 bytes)"
    if data[:2] == b"\xff\xd8":
        last_scan = data.rfind(b"\xff\xda")
        if last_scan < 0:
            return "a JPEG without image data (no start-of-scan marker)"
        if data.rfind(b"\xff\xd9") < last_scan:
            return f"a truncated JPEG ({len(data)} bytes, no end-of-image marker after its last scan)"
    elif data[:8] == b"\x89PNG\r\n\x1a\n" and b"IEND" not in data[-16:]:
        return f"a truncated PNG ({len(data)} bytes, no IEND chunk at its end)"
    return None


def header_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the image header, without decoding pixels; None when Pillow cannot tell."""
    from PIL import Image

    with warnings.catch_warnings():
        # Pillow warns (and past twice its own limit, raises) on huge images: lfabench applies its own cap
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(io.BytesIO(data)) as im:
                return int(im.size[0]), int(im.size[1])
        except Image.DecompressionBombError:
            saved, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
            try:  # read the size without Pillow's own check, to state it
                with Image.open(io.BytesIO(data)) as im:
                    return int(im.size[0]), int(im.size[1])
            finally:
                Image.MAX_IMAGE_PIXELS = saved
        except Exception:  # noqa: BLE001 - not a format Pillow identifies (OpenCV decides below)
            return None


def _too_large(where: str, width: int, height: int, max_pixels: int) -> ImageTooLargeError:
    return ImageTooLargeError(f"{where} is {width} x {height} = {width * height:,} pixels, more than "
                              f"max_image_pixels={max_pixels:,} (a decompression bomb, or raise the cap: "
                              f"max_image_pixels=...; skip_corrupt_images=true skips it)")


def read_image_file(path: Path | str, where: str | None = None,
                    max_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS) -> np.ndarray:
    """The image in ``path``: ``(H, W)`` grayscale or ``(H, W, 3)`` RGB (an alpha channel dropped).

    ``where`` names the file in errors (default: the path); ``max_pixels`` (None: no cap) bounds
    ``H * W``, checked on the header before decoding. Raises :class:`CorruptImageError` or
    :class:`ImageTooLargeError` (see the module docstring); a missing file is a ``FileNotFoundError``.
    """
    try:
        import cv2
    except ImportError as exc:  # pragma: no cover - cv2 is a core dependency
        raise ImportError("reading image files needs OpenCV: pip install opencv-python-headless") from exc
    path = Path(path)
    where = where or f"image {path}"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:  # a folder, a file this user may not read, an I/O error
        raise CorruptImageError(f"{where} cannot be read ({type(exc).__name__}: {exc.strerror or exc})") from exc
    problem = truncation_problem(data)
    if problem:
        raise CorruptImageError(f"{where} is corrupt: {problem}")
    size = header_size(data) if max_pixels else None
    if size is not None and size[0] * size[1] > max_pixels:
        raise _too_large(where, size[0], size[1], max_pixels)
    try:
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise CorruptImageError(f"{where} cannot be decoded by OpenCV ({str(exc).strip().splitlines()[-1]})") from exc
    if image is None:
        raise CorruptImageError(f"{where} cannot be decoded (not an image, or a corrupt one)")
    if max_pixels and image.shape[0] * image.shape[1] > max_pixels:  # a format whose header Pillow cannot read
        raise _too_large(where, image.shape[1], image.shape[0], max_pixels)
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB if image.shape[2] == 3 else cv2.COLOR_BGRA2RGB)
    return image
