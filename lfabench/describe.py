"""The descriptor contract: a plugin that turns every sample of a dataset into local descriptors.

:meth:`Descriptor.describe` runs a plugin's per-image :meth:`Descriptor.extract` over a
dataset, and is

* **cached**: the result is an :class:`~lfabench.storage.ArrayCache` entry whose key is made
  of the dataset fingerprint, the descriptor's module, class and parameters, a hash of
  the plugin's source file (so editing an extractor never reuses stale arrays) and
  lfabench's version. Arrays are ``.npz`` loaded without pickle.
* **parallel**: chunks of ``chunk_size`` images run on joblib's loky workers (fresh processes, so
  OpenCV/BLAS thread pools of the parent are never forked, and user scripts need no
  ``if __name__ == "__main__":`` guard), one worker per core by default (``n_jobs``, or
  ``$LFABENCH_N_JOBS``), with a tqdm progress bar. Workers exit when their parent dies.
* **resumable**: each finished chunk is written at once (atomically) to
  ``<cache>/<key>.partial/``; a rerun after an interruption computes only the missing
  chunks. When all are there they are concatenated into the entry and the folder removed.
* **safe for concurrent runs**: every file is written to a temporary name then renamed, and an
  entry is computed under its lock (:meth:`ArrayCache.lock`): a second run sharing the cache waits
  for the first and loads its entry instead of computing every chunk again; no ``.partial/``
  folder outlives its finished entry.

After ``describe``, :meth:`Descriptor.record_info` says what happened (cache hit or miss,
chunks reused, the selection rule of the per-image cap); the runner stores it in the run record.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .bags import Bags, descriptor_dtype_problem
from .dataset import CorruptImageError, Dataset
from .estimator import Estimator
from .storage import ArrayCache, CacheWarning, cache_key, resolve_cache, save_npz_atomic

#: Set to 0/false/no/off to turn off descriptor caching everywhere (whatever ``describe``'s ``cache`` says).
NO_CACHE_ENV = "LFABENCH_DESCRIPTOR_CACHE"


class DescriptorDataError(ValueError):
    """Descriptors that cannot be used as they are (read from a malformed file, beyond float32's range, of
    another dimension than the other samples'); the message names the file or the sample."""


def as_float32(D: np.ndarray, where: str) -> np.ndarray:
    """``D`` as float32; a finite value beyond float32's range (about 3.4e38) is a :class:`DescriptorDataError`
    naming ``where`` (the conversion would make it inf, later reported as "not finite")."""
    with np.errstate(over="ignore", invalid="ignore"):  # found and reported below
        D32 = D.astype(np.float32, copy=False)
    if D32 is not D and D.size:
        with np.errstate(invalid="ignore"):
            overflow = np.isinf(D32) & np.isfinite(D)
        if overflow.any():
            row, col = (int(v) for v in np.argwhere(overflow)[0])
            raise DescriptorDataError(f"{where}: value {D[row, col].item():g} (row {row}, column {col}) overflows float32 "
                                      f"(largest {float(np.finfo(np.float32).max):.4g}); {int(overflow.sum())} "
                                      f"value(s) in all")
    return D32


def default_n_jobs() -> int:
    """``$LFABENCH_N_JOBS`` or the number of cores this process may use."""
    env = os.environ.get("LFABENCH_N_JOBS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _source_digest(obj) -> str:
    """sha256 (16 hex) of the source files of ``obj``'s plugin: its module and every module beside it.

    A descriptor plugin shares private helpers with the plugins of its folder, so an edit to any of
    them gives new cache keys (the cache never serves descriptors computed by older code).
    """
    h = hashlib.sha256()
    module = sys.modules.get(type(obj).__module__)
    try:
        path = inspect.getsourcefile(module) if module is not None else None
    except TypeError:
        path = None
    if path and os.path.exists(path):
        for source in sorted(Path(path).parent.glob("*.py")):
            h.update(source.name.encode())
            h.update(source.read_bytes())
    else:
        h.update(type(obj).__module__.encode())
    return h.hexdigest()[:16]


def _caching_enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "1").lower() not in ("0", "false", "no", "off")


class Descriptor(Estimator):
    """Base class for descriptor extractors.

    Subclasses implement :meth:`extract` for one image; :meth:`describe` runs it over a
    dataset and returns one :class:`Bags`. Hyper-parameters are ``__init__`` arguments stored
    under the same names, so scikit-learn's ``get_params``/``set_params`` (the one parameter
    convention of every plugin kind) return them; they are recorded in run records and cache keys.
    """

    #: Keypoint columns produced by :meth:`extract` (see ``lfabench.bags.KEYPOINT_FIELDS``).
    keypoint_fields: tuple[str, ...] = ("x", "y")
    #: Side of the square image region one descriptor describes, in units of its keypoint's ``scale``
    #: (in pixels when there is no ``scale`` field); ``lfabench explain`` crops that much. None: not stated.
    keypoint_extent: float | None = None
    #: How the per-image cap chooses descriptors (recorded in every run record).
    selection_rule: str = "all descriptors are kept (no per-image cap)"
    #: Images per cached/parallel chunk.
    chunk_size: int = 64
    #: False for extractors that read something else than the dataset's images (``precomputed``).
    needs_images: bool = True
    #: False when caching would only copy files that are already arrays on disk.
    cacheable: bool = True

    def extract(self, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local descriptors of one image: ``(descriptors (n, d), keypoints (n, k))``."""
        raise NotImplementedError

    def extract_sample(self, dataset: Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Local descriptors of sample ``i`` of ``dataset`` (default: :meth:`extract` of its image)."""
        return self.extract(dataset.load_image(i))

    # ------------------------------------------------------------------ record
    def record_info(self) -> dict[str, Any]:
        """What the run record stores about this extractor and its last :meth:`describe`."""
        return {"extractor": f"{type(self).__module__}.{type(self).__qualname__}", "params": self.get_params(),
                "keypoint_fields": list(self.keypoint_fields), "selection_rule": self.selection_rule,
                "extraction": dict(getattr(self, "_extraction", {}) or {})}

    def cache_parts(self, dataset: Dataset) -> dict[str, Any]:
        """What identifies this extraction (lfabench's version is added by :func:`cache_key`)."""
        parts = {"dataset": dataset.fingerprint(), "dataset_name": dataset.name,
                 "extractor": f"{type(self).__module__}.{type(self).__qualname__}",
                 "params": self.get_params(), "code": _source_digest(self)}
        if getattr(dataset, "skip_corrupt_images", False):  # an entry with skipped images is never served to a strict run
            parts["skip_corrupt_images"] = True
            # the cap decides which images are skipped (a strict run fails instead, so its key needs no cap)
            parts["max_image_pixels"] = getattr(dataset, "max_image_pixels", None)
        return parts

    # ----------------------------------------------------------------- extract
    def _extract_checked(self, dataset: Dataset, i: int) -> tuple[np.ndarray, np.ndarray]:
        sid = dataset.sample_ids[i]
        try:
            D, K = self.extract_sample(dataset, i)
        except Exception as exc:
            if hasattr(exc, "add_note"):  # Python >= 3.11: name the sample in the traceback
                exc.add_note(f"while {type(self).__name__} extracted sample {i} ({sid!r}) of {dataset.name!r}")
            raise
        D = np.asarray(D)
        problem = descriptor_dtype_problem(D.dtype)
        if problem:  # never convert in silence (a lost imaginary part, booleans as numbers)
            raise TypeError(f"{type(self).__name__}.extract on sample {i} ({sid!r}) of {dataset.name!r}: {problem}")
        if D.ndim == 2:
            D = as_float32(D, f"{type(self).__name__}.extract on sample {i} ({sid!r}) of {dataset.name!r}")
        K = np.asarray(K, dtype=np.float32)
        if D.ndim != 2 or K.ndim != 2 or K.shape[0] != D.shape[0] or K.shape[1] != len(self.keypoint_fields):
            raise ValueError(f"{type(self).__name__}.extract on sample {sid!r} returned descriptors {D.shape} "
                             f"and keypoints {K.shape}; expected (n, d) and (n, {len(self.keypoint_fields)})")
        return D, K

    def _extract_range(self, dataset: Dataset, start: int, stop: int) -> dict[str, np.ndarray]:
        descs, kps, skipped = [], [], []
        for i in range(start, stop):
            try:
                D, K = self._extract_checked(dataset, i)
            except CorruptImageError:
                if not getattr(dataset, "skip_corrupt_images", False):
                    raise
                skipped.append(i)  # an empty sample, counted in the record; never a grey guess
                D = K = None
            descs.append(D)
            kps.append(K)
        dims = {d.shape[1] for d in descs if d is not None}
        width = next(iter(dims)) if len(dims) == 1 else 0
        descs = [np.empty((0, width), np.float32) if d is None else d for d in descs]
        kps = [np.empty((0, len(self.keypoint_fields)), np.float32) if k is None else k for k in kps]
        if not dims:
            dims = {width}
        if len(dims) != 1:
            raise DescriptorDataError(self._dimension_clash(dataset, start, descs))
        return {"descriptors": np.concatenate(descs), "keypoints": np.concatenate(kps),
                "counts": np.array([d.shape[0] for d in descs], dtype=np.int64),
                "skipped": np.asarray(skipped, dtype=np.int64)}

    def _dimension_clash(self, dataset: Dataset, start: int, descs: list[np.ndarray]) -> str:
        """The message for samples of one chunk with descriptors of different widths: the first sample and the
        first that differs from it, by index and id, with both dimensions."""
        sized = [(start + j, d.shape[1]) for j, d in enumerate(descs) if d.size or d.shape[1]]
        (i0, d0), (i1, d1) = sized[0], next(item for item in sized if item[1] != sized[0][1])
        ids = dataset.sample_ids
        return (f"{type(self).__name__}: sample {i1} ({ids[i1]!r}) of {dataset.name!r} has {d1}-dimensional descriptors, "
                f"but sample {i0} ({ids[i0]!r}) has {d0}-dimensional ones")

    def describe(self, dataset: Dataset, progress: bool = True, n_jobs: int | None = None,
                 cache: bool | str | Path | ArrayCache | None = True) -> Bags:
        """Local descriptors of every sample of ``dataset``, as one :class:`Bags` (ids = sample ids).

        Parameters
        ----------
        progress : show a tqdm bar (datasets of 200 samples or more).
        n_jobs : worker processes (default :func:`default_n_jobs`); 1 runs in this process.
        cache : ``True`` (default: the array cache), ``False``/``None`` (no cache), a folder, or an
            :class:`ArrayCache` (:func:`lfabench.storage.resolve_cache`); ``$LFABENCH_DESCRIPTOR_CACHE=0``
            turns caching off whatever this says.
        """
        if self.needs_images and dataset.images is None:
            raise TypeError(f"descriptor {type(self).__name__} needs images, but dataset {dataset.name!r} ships "
                            f"its own local descriptors: use descriptor=native")
        t0 = time.perf_counter()
        m = dataset.n_samples
        if m == 0:
            raise ValueError(f"dataset {dataset.name!r} has no samples to describe")
        n_jobs = default_n_jobs() if n_jobs is None else max(1, int(n_jobs))
        store = resolve_cache(cache) if self.cacheable and _caching_enabled() else None
        chunks = [(s, min(s + self.chunk_size, m)) for s in range(0, m, self.chunk_size)]
        info: dict[str, Any] = {"n_samples": m, "n_chunks": len(chunks), "chunk_size": self.chunk_size}
        if store is None:
            parts = self._compute(dataset, chunks, n_jobs, progress, None)
            info.update(cache="off", chunks_computed=len(chunks), chunks_reused=0)
            bags = self._assemble(parts, dataset)
        else:
            key = cache_key("descriptors", f"{dataset.name}-{type(self).__name__.lower()}", self.cache_parts(dataset))
            info.update(cache_key=key, cache_dir=str(store.root))
            arrays = store.load(key)
            if arrays is None:
                # one run computes an entry at a time; a concurrent run waits here, then finds it complete
                with store.lock(key):
                    arrays = store.load(key)
                    if arrays is None:
                        arrays, computed = self._compute_cached(store, key, dataset, chunks, n_jobs, progress)
                        reused = len(chunks) - computed
                        info.update(cache="miss" if reused == 0 else "resumed", chunks_computed=computed,
                                    chunks_reused=reused)
                    else:
                        info.update(cache="hit", waited_for_concurrent_run=True)
            else:
                info.update(cache="hit")
            if info["cache"] == "hit":
                info.update(chunks_computed=0, chunks_reused=len(chunks))
                # chunks an older lfabench wrote after the entry was finished: nothing will ever read them
                shutil.rmtree(store.root / f"{key}.partial", ignore_errors=True)
            self._last_skipped = [int(i) for i in arrays.get("skipped", ())]
            bags = Bags(arrays["descriptors"], arrays["offsets"], keypoints=arrays["keypoints"],
                        ids=dataset.sample_ids, keypoint_fields=self.keypoint_fields)
        if getattr(dataset, "skip_corrupt_images", False):
            skipped = self._last_skipped
            info.update(corrupt_images_skipped=len(skipped),
                        corrupt_image_ids=[str(dataset.sample_ids[i]) for i in skipped[:100]])
        info.update(n_jobs=n_jobs, seconds=round(time.perf_counter() - t0, 3))
        self._extraction = info
        return bags

    # --------------------------------------------------------------- internals
    def _assemble(self, parts: list[dict[str, np.ndarray]], dataset: Dataset) -> Bags:
        arrays = self._concat(parts)
        self._last_skipped = [int(i) for i in arrays.get("skipped", ())]
        return Bags(arrays["descriptors"], arrays["offsets"], keypoints=arrays["keypoints"], ids=dataset.sample_ids,
                    keypoint_fields=self.keypoint_fields)

    def _concat(self, parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        # a chunk whose every image was skipped as corrupt has no width of its own
        dims = {p["descriptors"].shape[1] for p in parts if p["descriptors"].size or p["descriptors"].shape[1]}
        width = next(iter(dims)) if len(dims) == 1 else 0
        parts = [dict(p, descriptors=p["descriptors"].reshape(-1, width)) if not p["descriptors"].size else p
                 for p in parts]
        dims = dims or {width}
        if len(dims) != 1:
            raise DescriptorDataError(f"{type(self).__name__}: descriptor dimensions differ across chunks of "
                                      f"{self.chunk_size} samples ({sorted(dims)})")
        counts = np.concatenate([p["counts"] for p in parts])
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        out = {"descriptors": np.ascontiguousarray(np.concatenate([p["descriptors"] for p in parts])),
               "keypoints": np.ascontiguousarray(np.concatenate([p["keypoints"] for p in parts])),
               "offsets": offsets}
        skipped = np.concatenate([p.get("skipped", np.empty(0, np.int64)) for p in parts]).astype(np.int64)
        if skipped.size:  # only runs with skip_corrupt_images=true ever have some
            out["skipped"] = skipped
        return out

    def _compute(self, dataset, chunks, n_jobs, progress, on_done) -> list[dict[str, np.ndarray]]:
        """Run ``chunks`` (``(start, stop)`` pairs); ``on_done(index, arrays)`` sees each one as it finishes."""
        from tqdm.auto import tqdm  # at first use: tqdm.auto imports asyncio, a tenth of lfabench run's start-up

        results: list[dict[str, np.ndarray] | None] = [None] * len(chunks)
        total = sum(b - a for a, b in chunks)
        bar = tqdm(total=total, desc=f"{type(self).__name__} on {dataset.name}", unit="img",
                   disable=not progress or total < 200, leave=False)
        try:
            if n_jobs == 1 or len(chunks) <= 1:
                for j, (a, b) in enumerate(chunks):
                    results[j] = self._extract_range(dataset, a, b)
                    if on_done:
                        on_done(j, results[j])
                    bar.update(b - a)
            else:
                from joblib import Parallel, delayed

                # joblib's loky workers: no fork of the parent's thread pools, no `__main__` guard needed in
                # user scripts (tasks travel by cloudpickle), and _run_chunk makes each worker exit when its
                # parent dies (a SIGKILLed run leaves no extraction behind).
                parallel = Parallel(n_jobs=min(n_jobs, len(chunks)), backend="loky", return_as="generator_unordered")
                tasks = (delayed(_run_chunk)(self, dataset, j, a, b, os.getpid()) for j, (a, b) in enumerate(chunks))
                for j, arrays in parallel(tasks):
                    results[j] = arrays
                    if on_done:
                        on_done(j, arrays)
                    bar.update(chunks[j][1] - chunks[j][0])
        finally:
            bar.close()
        return results  # type: ignore[return-value]

    def _compute_cached(self, store: ArrayCache, key: str, dataset, chunks, n_jobs, progress):
        """The entry's arrays, each chunk saved under ``<key>.partial/`` as it finishes (a killed run resumes from
        them); a chunk that cannot be saved (a cache that cannot be written) warns once and is kept in memory."""
        partial = store.root / f"{key}.partial"
        names = [partial / f"chunk-{j:05d}-of-{len(chunks):05d}.npz" for j in range(len(chunks))]
        todo = [j for j, p in enumerate(names) if not p.exists()]
        unsaved: dict[int, dict[str, np.ndarray]] = {}

        def save(local_j: int, arrays: dict[str, np.ndarray]) -> None:
            if not unsaved:
                try:
                    save_npz_atomic(names[todo[local_j]], arrays)
                    return
                except OSError as exc:
                    warnings.warn(f"could not store descriptor chunks of cache entry {key}: {exc}; going on "
                                  f"without caching them", CacheWarning)
            unsaved[todo[local_j]] = arrays

        if todo:
            self._compute(dataset, [chunks[j] for j in todo], n_jobs, progress, save)
        parts = []
        for j, p in enumerate(names):
            if j in unsaved:
                parts.append(unsaved[j])
                continue
            try:
                with np.load(p, allow_pickle=False) as z:
                    parts.append({k: z[k] for k in ("descriptors", "keypoints", "counts", "skipped") if k in z.files})
            except FileNotFoundError:
                done = store.load(key)  # another run finished this entry and removed the chunks
                if done is None:
                    raise
                return done, len(todo)
        arrays = self._concat(parts)
        store.save(key, arrays, meta={"kind": "descriptors", "dataset": dataset.name, "n_samples": dataset.n_samples,
                                      "extractor": type(self).__name__, "params": self.get_params(),
                                      "selection_rule": self.selection_rule,
                                      "keypoint_fields": list(self.keypoint_fields),
                                      "parts": self.cache_parts(dataset)})
        shutil.rmtree(partial, ignore_errors=True)
        return arrays, len(todo)


# ------------------------------------------------------------- worker processes
_WATCHING: dict[str, int] = {}


def _die_with_parent(parent: int) -> None:
    """In a worker: exit as soon as ``parent`` is gone (checked every 0.2 s by a daemon thread).

    The kernel re-parents an orphaned worker; without this it would finish every queued chunk
    (minutes) for a run that no longer exists.
    """
    if _WATCHING.get("parent") == parent or os.getpid() == parent:
        return
    _WATCHING["parent"] = parent
    import threading

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.2)

    threading.Thread(target=watch, name="lfabench-parent-watch", daemon=True).start()


def _run_chunk(descriptor: Descriptor, dataset: Dataset, j: int, start: int, stop: int,
               parent: int) -> tuple[int, dict[str, np.ndarray]]:
    _die_with_parent(parent)
    try:  # one process per core already: keep OpenCV single-threaded inside each
        import cv2

        cv2.setNumThreads(1)
    except ImportError:  # pragma: no cover
        pass
    return j, descriptor._extract_range(dataset, start, stop)
