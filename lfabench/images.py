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

What it returns is the image as a photo viewer shows it, in 8 bits (:func:`to_uint8`, the same for every
descriptor): 16-bit images scaled (``x // 257``: 65535 is white), float images scaled (``[0, 1]`` is black to
white, values within ``0..255`` kept, any other range scaled from its own minimum and maximum; never clipped;
NaN or infinite pixels refused), and the EXIF orientation applied (:func:`apply_orientation`: a phone photo
taken upright is described upright). An 8-bit image without an orientation tag is returned as OpenCV decodes it.
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


def to_uint8(image: np.ndarray) -> np.ndarray:
    """``image`` (any channels) scaled to uint8 without clipping (module docstring); uint8 is returned as it is.

    uint16: ``x // 257``. Other unsigned integers: ``x * 255 // max`` of the type. Floats: ``[0, 1]`` times 255,
    values within ``[0, 255]`` kept, any other range mapped linearly from its minimum and maximum onto ``0..255``
    (rounded). Raises ``ValueError`` for non-finite floats, negative integers, and non-numeric arrays.
    """
    img = np.asarray(image)
    if img.dtype == np.uint8:
        return img
    if img.dtype == np.uint16:
        return (img // 257).astype(np.uint8)
    if img.dtype.kind == "b":
        return img.astype(np.uint8) * 255
    if img.dtype.kind in "iu":
        if img.size and img.min() < 0:
            raise ValueError(f"an integer image with negative values ({img.dtype}) has no 8-bit reading")
        top = np.iinfo(img.dtype).max
        return (img.astype(np.float64) * 255.0 / top).round().astype(np.uint8)
    if img.dtype.kind != "f":
        raise ValueError(f"an image of dtype {img.dtype} has no 8-bit reading")
    if img.size and not np.isfinite(img).all():
        raise ValueError("a float image with NaN or infinite pixels has no 8-bit reading")
    img = img.astype(np.float64)
    lo, hi = (float(img.min()), float(img.max())) if img.size else (0.0, 0.0)
    if lo >= 0.0 and hi <= 1.0:
        img = img * 255.0
    elif not (lo >= 0.0 and hi <= 255.0):
        img = (img - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(img)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)  # the clip only catches rounding at the ends


#: EXIF orientation -> how to turn the stored pixels into the image as shown (Pillow's ImageOps.exif_transpose).
_ORIENTATIONS = {
    2: lambda a: a[:, ::-1],                      # mirrored left-right
    3: lambda a: a[::-1, ::-1],                   # upside down
    4: lambda a: a[::-1],                         # mirrored top-bottom
    5: lambda a: np.swapaxes(a, 0, 1),            # transposed
    6: lambda a: np.rot90(a, k=-1),               # turned 90 degrees clockwise to view
    7: lambda a: np.swapaxes(a, 0, 1)[::-1, ::-1],  # transverse (mirrored across the other diagonal)
    8: lambda a: np.rot90(a, k=1),                # turned 90 degrees counter-clockwise to view
}


def exif_orientation(data: bytes) -> int:
    """The EXIF orientation tag (1..8) of the encoded image ``data``; 1 when absent or unreadable."""
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with Image.open(io.BytesIO(data)) as im:
                value = im.getexif().get(0x0112, 1)
        except Exception:  # noqa: BLE001 - no EXIF that Pillow can read: shown as stored
            return 1
    return int(value) if isinstance(value, int) and value in range(1, 9) else 1


def apply_orientation(image: np.ndarray, orientation: int) -> np.ndarray:
    """``image`` (``(H, W)`` or ``(H, W, C)``) as a viewer shows it under EXIF ``orientation``; 1 leaves it as is."""
    turn = _ORIENTATIONS.get(int(orientation))
    return image if turn is None else np.ascontiguousarray(turn(image))


def _too_large(where: str, width: int, height: int, max_pixels: int) -> ImageTooLargeError:
    return ImageTooLargeError(f"{where} is {width} x {height} = {width * height:,} pixels, more than "
                              f"max_image_pixels={max_pixels:,} (a decompression bomb, or raise the cap: "
                              f"max_image_pixels=...; skip_corrupt_images=true skips it)")


def read_image_file(path: Path | str, where: str | None = None,
                    max_pixels: int | None = DEFAULT_MAX_IMAGE_PIXELS) -> np.ndarray:
    """The image in ``path``: ``(H, W)`` grayscale or ``(H, W, 3)`` RGB uint8 (an alpha channel dropped), 16-bit and
    float images scaled to 8 bits and the EXIF orientation applied (module docstring).

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
        if image.shape[2] == 1:
            image = image[..., 0]
        else:
            image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB if image.shape[2] == 3 else cv2.COLOR_BGRA2RGB)
    try:
        image = to_uint8(image)
    except ValueError as exc:
        raise CorruptImageError(f"{where}: {exc}") from None
    return apply_orientation(image, exif_orientation(data))
