"""Conformance batteries for every plugin kind, for lfabench's own plugins and third-party ones.

Each kind has named checks (``check_<what>``), individually selectable, and declared expected
failures with reasons (scikit-learn's ``estimator_checks`` idea):

* aggregators: :func:`aggregator_checks` (estimator API, empty samples, determinism, ...);
* descriptors: :func:`descriptor_checks` (one block per sample, keypoints, cache round trip, ...);
* datasets: :func:`dataset_checks` (ids, labels, ground truth, readable samples, stable fingerprint);
* evaluators: :func:`evaluator_checks` (deterministic valid splits, finite metrics, oracle >= noise);
* every kind: :func:`check_param_validation` (each parameter declared; an invalid value refused by the
  command line's check, the constructor and ``fit``, in the same words), run by :func:`plugin_checks`.

In a third-party package's tests::

    from lfabench.testing import aggregator_checks, parametrize

    @parametrize(aggregator_checks(MyAggregator(random_state=0),
                                   expected_failures={"check_subset_consistency": "batch-normalised"}))
    def test_conformance(check):
        check()

or, for a plugin installed under the ``lfabench`` entry points, by name::

    @parametrize(plugin_checks("aggregator", "my_agg"))

(``lfabench plugins check my_agg`` prints the same battery as a pass/fail report). A case whose
plugin cannot run here (optional extra, real data missing) is skipped with the reason.
"""

from .aggregators import aggregator_checks, check_aggregator
from .core import Case, CheckResult, CheckSkip, parametrize, run_cases
from .data import make_check_bags, make_check_bags_dataset, make_check_image_dataset, make_check_retrieval_dataset
from .datasets import DatasetSource, dataset_checks
from .descriptors import descriptor_checks
from .evaluators import evaluator_checks
from .params import check_param_validation
from .plugins import check_plugin, plugin_checks, small_params

__all__ = ["Case", "CheckResult", "CheckSkip", "DatasetSource", "aggregator_checks", "check_aggregator",
           "check_param_validation", "check_plugin", "dataset_checks", "descriptor_checks", "evaluator_checks",
           "make_check_bags", "make_check_bags_dataset", "make_check_image_dataset", "make_check_retrieval_dataset",
           "parametrize", "plugin_checks", "run_cases", "small_params"]
