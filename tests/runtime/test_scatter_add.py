"""runtime.ops.prims.scatter_add: np.add.at's result (repeated indices accumulate) by sorted
segment sums where the key is one integer array of rows, np.add.at itself elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from runtime.ops.prims import scatter_add


@pytest.mark.parametrize("out_shape,idx_shape", [((103, 128), (16, 64)), ((7, 3, 4), (20,)),
                                                 ((5, 16), (5,)), ((50, 9), (3, 4, 5))])
def test_matches_add_at(out_shape: tuple[int, ...], idx_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    n = out_shape[0]
    idx = rng.integers(-n, n, idx_shape)  # negative indices count from the end
    g = rng.standard_normal(idx_shape + out_shape[1:])
    want = np.zeros(out_shape)
    np.add.at(want, idx, g)
    got = np.zeros(out_shape)
    scatter_add(got, idx, g)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    got = np.zeros(out_shape)
    scatter_add(got, (idx,), g)  # the key as a one-element tuple
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_other_keys_and_bad_indices_behave_as_add_at() -> None:
    rng = np.random.default_rng(1)
    out, want = np.zeros((4, 10)), np.zeros((4, 10))
    rows, cols = rng.integers(0, 4, 30), rng.integers(0, 10, 30)
    g = rng.standard_normal(30)
    scatter_add(out, (rows, cols), g)
    np.add.at(want, (rows, cols), g)
    np.testing.assert_array_equal(out, want)
    with pytest.raises(IndexError, match="out of bounds"):
        scatter_add(np.zeros((4, 10)), np.array([0, 4]), np.ones((2, 10)))
    with pytest.raises(IndexError, match="out of bounds"):
        scatter_add(np.zeros((4, 10)), np.array([-5, 1]), np.ones((2, 10)))
