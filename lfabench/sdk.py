"""The plugin SDK: every name of the core a plugin may import, in one module.

A plugin (built-in under ``plugins/`` or from another package) imports the core from here and from
:mod:`lfabench.evaluation` (the pure metric functions) only; everything else in ``lfabench`` is the
pipeline's own and may change without notice. ``lint-imports`` holds the built-in plugins to this
(the "plugin SDK" contract in ``pyproject.toml``); ``docs/plugins.md`` lists the names for authors.

What each group is for:

* declaring a plugin: :data:`hookimpl`, :class:`PluginSpec`, :class:`DatasetProtocol`,
  :func:`default_params`, :class:`Resource` (a download a dataset declares);
* the contracts a plugin implements: :class:`Aggregator` (with :class:`PrototypeSupport`,
  :class:`Searcher` for a method that indexes a database and searches it itself, :func:`is_searcher`,
  :class:`FitDataError`, :class:`UndefinedCriterionError` and the label helpers), :class:`Descriptor`
  (with :class:`DescriptorDataError`, :func:`as_float32`), :class:`Evaluator` + :class:`Split`,
  :class:`Dataset` + :class:`RetrievalGroundTruth`, and the data model :class:`Bags`;
* parameters: :class:`Interval`, :class:`StrOptions` and the ranges :data:`COUNT`, :data:`COUNT_OR_ZERO`,
  :data:`POSITIVE`, :data:`NON_NEGATIVE` for a plugin's ``_parameter_constraints``; :class:`ConfigError`;
* helpers the pipeline already keeps right: dataset folders (:func:`dataset_root`, :func:`missing_error`,
  :func:`registered_as`), the seeded splits (:func:`stratified_split`, ...), cached fits
  (:func:`cached_fit`, :func:`cacheable_seed`, :func:`array_fingerprint`), fingerprints, image
  conversion, a serial BLAS section, whether the BLAS computes a product's rows each on its own
  (:func:`gemm_rows_are_own`, for ``independent_rows``) and modules imported at first use (:class:`LazyModule`).
"""

from __future__ import annotations

from .aggregate import (
    Aggregator,
    FitDataError,
    PrototypeSupport,
    Searcher,
    SearcherError,
    UndefinedCriterionError,
    annotated_class_sizes,
    check_labels,
    describe_class_sizes,
    is_searcher,
)
from .bags import KEYPOINT_FIELDS, Bags, descriptor_dtype_problem
from .dataroot import dataset_root, missing_error, registered_as
from .dataset import Dataset, RetrievalGroundTruth, file_digest
from .describe import Descriptor, DescriptorDataError, as_float32
from .download import Resource
from .estimator import not_fitted
from .evaluate import Evaluator, Split
from .fingerprint import bags_fingerprint
from .gemm_rows import gemm_rows_are_own
from .hookspecs import hookimpl
from .images import to_uint8
from .lazy import LazyModule
from .params import COUNT, COUNT_OR_ZERO, NON_NEGATIVE, POSITIVE, ConfigError, Interval, StrOptions
from .plugin import DatasetProtocol, PluginSpec, default_params
from .splits import LABELLED_UNITS, labelled_classes, labelled_subset, partial_labels, stratified_split
from .storage import array_fingerprint, cacheable_seed, cached_fit
from .threads import imap_in_order, map_row_blocks, serial_blas

__all__ = [
    "COUNT", "COUNT_OR_ZERO", "KEYPOINT_FIELDS", "LABELLED_UNITS", "NON_NEGATIVE", "POSITIVE",
    "Aggregator", "Bags", "ConfigError", "Dataset", "DatasetProtocol", "Descriptor", "DescriptorDataError",
    "Evaluator", "FitDataError", "Interval", "LazyModule", "PluginSpec", "PrototypeSupport", "Resource",
    "RetrievalGroundTruth", "Searcher", "SearcherError", "Split", "StrOptions", "UndefinedCriterionError",
    "annotated_class_sizes", "array_fingerprint", "as_float32", "bags_fingerprint", "cacheable_seed", "cached_fit",
    "check_labels", "dataset_root", "default_params", "describe_class_sizes", "descriptor_dtype_problem",
    "file_digest", "gemm_rows_are_own", "hookimpl", "imap_in_order", "is_searcher", "labelled_classes",
    "labelled_subset", "map_row_blocks", "missing_error", "not_fitted",
    "partial_labels", "registered_as", "serial_blas", "stratified_split", "to_uint8",
]
