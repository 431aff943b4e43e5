"""Ray's side of the Python word count in `bench/languages/run.sh`: the
same code as `examples/python/wordcount/wordcount.py` (its pure functions
imported from it), as Ray tasks with the same map/merge tree, on Ray's own
Python workers on this machine. Prints the same report, then the wall time.

    ~/.cache/wray/ray-venv/bin/python ray_wordcount.py DIR
"""

import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
paths = [os.path.join(root, "sdk/python"), os.path.join(root, "examples/python/wordcount")]
sys.path[:0] = paths
# Ray's workers (started by ray.init from this process) import it too.
os.environ["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)

import ray  # noqa: E402

import wordcount as wc  # noqa: E402  (wray's decorators only record outside a component)


@ray.remote
def count_words(paths):
    counts = {}
    for path in paths:
        with open(path, "rb") as f:
            wc.add_counts(counts, f.read())
    return wc.sorted_counts(counts)


@ray.remote
def merge(a, b):
    return wc.merge_counts(a, b)


def main():
    directory = sys.argv[1]
    ray.init(num_cpus=int(os.environ.get("NUM_CPUS", "2")), include_dashboard=False, log_to_driver=False)
    ray.get(merge.remote([], []))  # warm: workers started
    start = time.perf_counter()
    parts = wc.chunks(wc.regular_files(directory), wc.CHUNK_BYTES)
    level = [count_words.remote(c) for c in parts]
    while len(level) > 1:
        level = [
            merge.remote(level[k], level[k + 1]) if k + 1 < len(level) else level[k]
            for k in range(0, len(level), 2)
        ]
    counts = [tuple(x) for x in ray.get(level[0])] if level else []
    for word, n in wc.top(counts, wc.TOP):
        print(f"{n}\t{word}")
    print(f"total\t{sum(n for _, n in counts)}")
    print(f"wall_s {time.perf_counter() - start:.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()
