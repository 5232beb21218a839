"""``native``: use the local descriptors that a dataset ships itself (``synthetic``, precomputed sets)."""

from __future__ import annotations

from lfabench.sdk import Bags, Dataset, Descriptor, PluginSpec, hookimpl


class Native(Descriptor):
    """Pass the dataset's own ``bags`` through unchanged (nothing to compute, so nothing to cache or parallelise)."""

    needs_images = False
    cacheable = False

    def describe(self, dataset: Dataset, progress: bool = True, n_jobs: int | None = None, cache=True) -> Bags:
        if dataset.bags is None:
            raise TypeError(f"descriptor=native needs a dataset that ships local descriptors; {dataset.name!r} "
                            f"ships images: choose an extractor (`lfabench plugins` lists the descriptors)")
        return dataset.bags


@hookimpl
def lfabench_descriptors():
    return [PluginSpec("native", Native, "The dataset's own local descriptors, unchanged")]
