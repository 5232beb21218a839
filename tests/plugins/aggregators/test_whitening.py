"""FV+NN's PCA-whitening from the Gram matrix against scikit-learn's PCA(whiten=True, svd_solver="full")."""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from lfabench_plugins.aggregators.whitening import PCAWhitening


@pytest.mark.parametrize("shape", [(120, 700), (700, 60)])     # wide (the Gram route) and tall (covariance)
def test_same_axes_variances_and_whitened_coordinates_as_sklearn(shape):
    rng = np.random.default_rng(0)
    m, n = shape
    F = rng.normal(size=(m, n)) * np.linspace(4.0, 0.2, n) + rng.normal(size=n)   # distinct variances
    k = 40
    ref = PCA(n_components=k, whiten=True, svd_solver="full").fit(F)
    got = PCAWhitening(k).fit(F)
    np.testing.assert_allclose(got.explained_variance_, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(got.components_, ref.components_, atol=1e-10)          # signs included
    T = rng.normal(size=(15, n))
    np.testing.assert_allclose(got.transform(T), ref.transform(T), atol=1e-9)
    np.testing.assert_allclose(np.cov(got.transform(F).T), np.eye(k), atol=1e-9)     # whitened


def test_component_count_is_checked():
    with pytest.raises(ValueError, match="n_components must be in 1..9"):
        PCAWhitening(10).fit(np.random.default_rng(0).normal(size=(10, 30)))
