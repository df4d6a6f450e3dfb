"""splitmix64 random numbers for kernels (the state is a uint64 array of length 1).

Used by CART's ``random`` strategy, ``max_features`` sampling and DICS per-node sampling
(:mod:`engine.cart`) and by the conditional inference permutations (:mod:`engine.cit`).
"""

from __future__ import annotations

import numpy as np

from engine._numba import njit


@njit
def rng_next(state):
    """Next 64-bit output of the splitmix64 generator whose state is ``state[0]`` (uint64)."""
    state[0] = state[0] + np.uint64(0x9E3779B97F4A7C15)
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit
def rng_below(state, m):
    """Uniform integer in ``[0, m)`` (m >= 1), from the top 53 bits."""
    u = np.float64(rng_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)
    r = np.int64(u * m)
    return r if r < m else m - 1


def rng_state(random_state) -> np.ndarray:
    """A fresh splitmix64 state from ``random_state`` (None, int or ``np.random.RandomState``)."""
    from sklearn.utils import check_random_state

    seed = check_random_state(random_state).randint(0, 2**31 - 1)
    return np.array([seed], dtype=np.uint64)
