"""Evaluation metrics as pure functions (public API; names are stable).

* :func:`average_precision`, :func:`mean_average_precision`, :func:`precision_at_k`
  — retrieval metrics on ranked lists, Oxford ``compute_ap.cpp`` protocol
  (:mod:`lfabench.evaluation.ranking`);
* :func:`revisited_scores` — the Revisited Oxford/Paris Easy / Medium / Hard mAP and mP@k
  (:mod:`lfabench.evaluation.revisited`);
* :func:`knn_accuracy`, :func:`knn_predict` — k-NN classification on FAISS, equal to
  scikit-learn's brute-force ``KNeighborsClassifier`` (:mod:`lfabench.evaluation.knn`);
* :func:`recompute_metrics`, :func:`label_predictions`, :func:`retrieval_predictions` — a protocol's
  stored predictions and every metric recomputed from them (:mod:`lfabench.evaluation.predictions`);
* :func:`rank_database`, :func:`fit_metric_space`, :func:`knn_search` — exact FAISS
  search with the lower-index tie rule (:mod:`lfabench.evaluation.search`);
* :func:`paired_wilcoxon_p`, :func:`compare_to_best` — paired significance over
  seeds (:mod:`lfabench.evaluation.significance`);
* :func:`corrected_resampled_ttest`, :func:`mcnemar_exact_p`, :func:`sign_flip_pvalues`,
  :func:`bootstrap_mean_ci`, :func:`paired_t_p`, :func:`two_way_bootstrap_ci` — paired tests with power:
  Nadeau & Bengio's corrected resampled t-test over repeated splits, McNemar's exact test on per-sample
  outcomes, the per-query randomization test and bootstrap intervals, the paired t over seeds
  (:mod:`lfabench.evaluation.paired_tests`); :func:`per_unit_scores` — what each test sample or query
  contributed to a metric, from stored predictions;
* :func:`holm`, :func:`tied_ranks`, :func:`friedman_test`, :func:`nemenyi_cd` — many comparisons at once:
  Holm's adjustment, ranks with ties, Friedman's test and Nemenyi's critical difference (Demšar 2006)
  (:mod:`lfabench.evaluation.multiple`).

FAISS and scikit-learn are imported when a function needs them, not on import.
"""

from .knn import accuracy_from_predictions, knn_accuracy, knn_predict
from .multiple import FriedmanResult, friedman_test, holm, nemenyi_cd, nemenyi_q, tied_ranks
from .paired_tests import (PairedDifference, bootstrap_mean_ci, corrected_resampled_ttest, mcnemar_exact_p,
                           paired_t_p, sign_flip_pvalues, two_way_bootstrap_ci)
from .predictions import (knn_predictions, label_predictions, per_unit_scores, predictions_fingerprint,
                          recompute_metrics, retrieval_predictions)
from .ranking import (average_precision, mean_average_precision, per_query_scores_from_places, precision_at_k,
                      ranked_list_from_places, ranking_prefix, ranks_of, retrieval_metrics_from_rankings,
                      scores_from_places)
from .revisited import SETUPS, revisited_metrics, revisited_precision_at_k, revisited_scores, revisited_setup
from .search import METRICS, MetricSpace, fit_metric_space, knn_search, rank_database, rank_database_blocks
from .significance import compare_to_best, paired_wilcoxon_p, significance_by_group
from .whitening import COVARIANCE_ESTIMATORS, Whitening, fit_whitening

__all__ = [
    "average_precision", "mean_average_precision", "precision_at_k", "ranking_prefix", "ranks_of",
    "ranked_list_from_places", "retrieval_metrics_from_rankings", "scores_from_places",
    "per_query_scores_from_places", "per_unit_scores",
    "PairedDifference", "corrected_resampled_ttest", "mcnemar_exact_p", "sign_flip_pvalues", "bootstrap_mean_ci",
    "paired_t_p", "two_way_bootstrap_ci",
    "knn_accuracy", "knn_predict", "accuracy_from_predictions",
    "label_predictions", "knn_predictions", "retrieval_predictions", "recompute_metrics", "predictions_fingerprint",
    "SETUPS", "revisited_precision_at_k", "revisited_scores", "revisited_setup", "revisited_metrics",
    "METRICS", "MetricSpace", "fit_metric_space", "knn_search", "rank_database", "rank_database_blocks",
    "paired_wilcoxon_p", "compare_to_best", "significance_by_group",
    "holm", "tied_ranks", "FriedmanResult", "friedman_test", "nemenyi_q", "nemenyi_cd",
    "COVARIANCE_ESTIMATORS", "Whitening", "fit_whitening",
]
