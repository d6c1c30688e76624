"""NumPy's legacy `RandomState` (MT19937) stream, drawn inside numba-compiled code.

Compiled world generation must consume `world.random` exactly as stock Crafter does:
`export_state` hands the generator's key and position to compiled code, the draws follow
NumPy's `mt19937_next` and `legacy_double` (Matsumoto and Nishimura, 1998), and
`import_state` writes the advanced state back for Python code to continue the stream.
"""

from __future__ import annotations

import numba
import numpy as np

_N, _M = 624, 397  # MT19937's state size and middle offset
_MATRIX_A = np.uint32(0x9908B0DF)
_UPPER = np.uint32(0x80000000)
_LOWER = np.uint32(0x7FFFFFFF)


def export_state(random: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """The generator's key (uint32[624], a copy) and position (int64[1], mutable)."""
    _, key, pos, _, _ = random.get_state(legacy=True)
    return np.array(key, dtype=np.uint32), np.array([pos], dtype=np.int64)


def import_state(random: np.random.RandomState, key: np.ndarray, pos: np.ndarray) -> None:
    """Continue `random` from the state that compiled code advanced."""
    _, _, _, has_gauss, gauss = random.get_state(legacy=True)
    random.set_state(("MT19937", key, int(pos[0]), has_gauss, gauss))


@numba.njit(cache=True)
def _twist(key: np.ndarray) -> None:
    for i in range(_N):
        y = (key[i] & _UPPER) | (key[(i + 1) % _N] & _LOWER)
        value = key[(i + _M) % _N] ^ (y >> np.uint32(1))
        if y & np.uint32(1):
            value ^= _MATRIX_A
        key[i] = value


@numba.njit(cache=True)
def next_uint32(key: np.ndarray, pos: np.ndarray) -> np.uint32:
    """One raw 32-bit output, as `mt19937_next`."""
    if pos[0] >= _N:
        _twist(key)
        pos[0] = 0
    y = key[pos[0]]
    pos[0] += 1
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    y ^= y >> np.uint32(18)
    return y


@numba.njit(cache=True)
def uniform(key: np.ndarray, pos: np.ndarray) -> float:
    """`RandomState.uniform()`: a double in [0, 1) from two 32-bit outputs."""
    a = next_uint32(key, pos) >> np.uint32(5)
    b = next_uint32(key, pos) >> np.uint32(6)
    return (a * 67108864.0 + b) / 9007199254740992.0
