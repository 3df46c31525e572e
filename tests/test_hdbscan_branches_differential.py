"""What `pickle_native_hdbscan_branches` computes, against the libraries whose results it predicts.

Branch detection joins a cluster's point pairs at most its heaviest tree edge apart, as scikit-learn's neighbour tree
measures them; wscan measures the tree's edges to tell whether each is among those pairs, so its distances must be
scikit-learn's to the last bit, not merely close. The components it finds must be those of any union-find.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import BallTree, KDTree

from wscan.scanners.pickle_native_hdbscan_branches import MEASURED, _components, _distances


@pytest.mark.parametrize("metric", sorted(MEASURED))
@pytest.mark.parametrize("tree_type", [KDTree, BallTree])
@pytest.mark.parametrize("width", [1, 3, 17, 70])
def test_distances_are_scikit_learns_to_the_bit(metric: str, tree_type: type, width: int) -> None:
    rng = np.random.default_rng(width)
    points = rng.normal(size=(200, width)) * rng.choice([1e-9, 1.0, 1e9], size=(200, 1))
    tree = tree_type(points, metric=metric)
    found, measured = tree.query_radius(points[:20], r=np.inf, return_distance=True)
    for row in range(20):
        ours = _distances(np.repeat(points[row : row + 1], len(found[row]), axis=0), points[found[row]],
                          MEASURED[metric])  # fmt: skip
        assert np.array_equal(ours, measured[row]), (metric, row)


def _reference(size: int, edges: list[tuple[int, int]]) -> list[int]:
    """Each node's least component member, by a plain union-find."""
    parent = list(range(size))

    def find(node: int) -> int:
        while parent[node] != node:
            node = parent[node]
        return node

    for left, right in edges:
        a, b = find(left), find(right)
        parent[max(a, b)] = min(a, b)
    return [find(node) for node in range(size)]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60).flatmap(lambda size: st.tuples(
    st.just(size), st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, size - 1)), max_size=90))))
def test_components_are_a_union_finds(case: tuple[int, list[tuple[int, int]]]) -> None:
    size, edges = case
    found = _components(size, np.array(edges, dtype=np.intp).reshape(-1, 2))
    assert found.tolist() == _reference(size, edges)


def test_components_of_a_long_shuffled_path_join_in_few_rounds() -> None:
    """A million points on one path in random order: one component, well within the rounds allowed."""
    order = np.random.default_rng(0).permutation(1_000_000)
    found = _components(len(order), np.stack([order[:-1], order[1:]], axis=1))
    assert not found.any()
