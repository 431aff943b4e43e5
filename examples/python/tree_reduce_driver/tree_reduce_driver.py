"""A Python driver for the Rust ``tree_reduce`` component (Ray's tree
reduce across languages).

``N`` tasks ``tree_reduce/make_array(i)`` each build array ``i`` =
``[i * M + j for j in range(M)]``; ``tree_reduce/add_arrays`` tasks sum them
element-wise, pairwise, level by level, each taking the ObjectRefs of the
level below (so the arrays never pass through this driver). The driver gets
the final array and checks its sum and first element against the closed
form, as the Rust driver does.

Run it with the Rust component deployed beside it under the name
``tree_reduce``::

    wray run tree_reduce_driver.wasm --with tree_reduce.wasm
"""

from __future__ import annotations

import sys
from typing import List

import wray

#: Number of arrays.
N = 100
#: Length of each array.
M = 1000

make_array = wray.function("tree_reduce/make_array")
add_arrays = wray.function("tree_reduce/add_arrays")


@wray.main
def main(args: List[str]) -> None:
    """Reduces the arrays and prints ``sum <n>`` and ``first <n>``."""
    level = [make_array.remote(i) for i in range(N)]
    while len(level) > 1:
        nxt = []
        for k in range(0, len(level), 2):
            pair = level[k : k + 2]
            nxt.append(add_arrays.remote(pair[0], pair[1]) if len(pair) == 2 else pair[0])
        level = nxt
    total: List[int] = wray.get(level[0])

    s = sum(total)
    first = total[0] if total else 0
    print(f"sum {s}")
    print(f"first {first}")

    # total[j] = sum over i of (i * M + j) = M * N(N-1)/2 + N * j.
    expected_first = M * N * (N - 1) // 2
    expected_sum = M * expected_first + N * M * (M - 1) // 2
    if s != expected_sum or first != expected_first:
        sys.exit(f"expected sum {expected_sum} and first {expected_first}")
