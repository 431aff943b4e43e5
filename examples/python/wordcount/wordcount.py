"""MapReduce word count, as a wray component written in Python: the Rust
``examples/wordcount`` in Python, with the same behaviour and output.

``main(["/data"])`` lists every regular file under ``/data`` (recursively,
without following symlinks), groups the sorted paths into chunks of about
1 MiB, and submits one ``count_words`` map task per chunk. The word-sorted
``[word, count]`` lists are then merged pairwise by a tree of ``merge``
tasks, each taking the ObjectRefs of the level below as arguments, so no
partial result passes through the driver. Finally it prints the 20 most
frequent words (``<count>\\t<word>``) and ``total\\t<number of words>``.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Dict, List, Tuple

import wray

#: Word counts sorted by word: ``[[word, count], ...]`` (JSON has no tuples).
Counts = List[Tuple[str, int]]

#: About how many bytes of files one map task reads.
CHUNK_BYTES = 1 << 20

#: How many words the report lists.
TOP = 20

#: A word: a maximal run of ASCII letters, digits and ``_``, case-sensitive;
#: every other byte (any byte of a non-ASCII character too) ends a word.
WORD = re.compile(rb"[A-Za-z0-9_]+")


# -- words (pure functions, as examples/wordcount/src/words.rs) -------------


def words(data: bytes) -> List[bytes]:
    """The words of ``data``."""
    return WORD.findall(data)


def add_counts(counts: Dict[bytes, int], data: bytes) -> None:
    """Counts the words of ``data`` into ``counts``."""
    for w in WORD.findall(data):
        counts[w] = counts.get(w, 0) + 1


def sorted_counts(counts: Dict[bytes, int]) -> Counts:
    """The counts, sorted by word (words are ASCII: byte order is text order)."""
    return [(w.decode("ascii"), n) for w, n in sorted(counts.items())]


def merge_counts(a: Counts, b: Counts) -> Counts:
    """Merge-join of two lists sorted by word, adding the counts of equal words."""
    out: Counts = []
    i = j = 0
    while i < len(a) and j < len(b):
        wa, wb = a[i][0], b[j][0]
        if wa < wb:
            out.append(a[i])
            i += 1
        elif wa > wb:
            out.append(b[j])
            j += 1
        else:
            out.append((wa, a[i][1] + b[j][1]))
            i += 1
            j += 1
    out.extend(a[i:])
    out.extend(b[j:])
    return out


def top(counts: Counts, n: int) -> Counts:
    """The ``n`` most frequent words, most frequent first, ties by word."""
    return sorted(counts, key=lambda wc: (-wc[1], wc[0]))[:n]


# -- files (as examples/wordcount/src/files.rs) ------------------------------


def regular_files(directory: str) -> List[Tuple[str, int]]:
    """Every regular file under ``directory``, recursively, as ``(path, size
    in bytes)`` sorted by path. Symlinks are neither followed nor counted."""
    files = []
    dirs = [directory]
    while dirs:
        d = dirs.pop()
        with os.scandir(d) as it:
            for entry in it:
                st = os.lstat(entry.path)
                if stat.S_ISDIR(st.st_mode):
                    dirs.append(entry.path)
                elif stat.S_ISREG(st.st_mode):
                    files.append((entry.path, st.st_size))
    files.sort()
    return files


def chunks(files: List[Tuple[str, int]], target: int) -> List[List[str]]:
    """Groups ``files`` (in order) into chunks of about ``target`` bytes: a
    chunk is closed once it holds at least ``target`` bytes, and a file is
    never split."""
    out: List[List[str]] = []
    chunk: List[str] = []
    size = 0
    for path, n in files:
        chunk.append(path)
        size += n
        if size >= target:
            out.append(chunk)
            chunk = []
            size = 0
    if chunk:
        out.append(chunk)
    return out


# -- the remote functions and the driver --------------------------------------


@wray.remote
def count_words(paths: List[str]) -> Counts:
    """Map: counts the words of every file in ``paths``, sorted by word."""
    counts: Dict[bytes, int] = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise OSError(f"reading {path}: {e}") from e
        add_counts(counts, data)
    return sorted_counts(counts)


@wray.remote
def merge(a: Counts, b: Counts) -> Counts:
    """Reduce: merges two word-sorted count lists."""
    return merge_counts(a, b)


@wray.main
def main(args: List[str]) -> None:
    """Counts the words of every file under ``args[0]``."""
    if not args:
        sys.exit("usage: wordcount <directory>")
    directory = args[0]
    try:
        files = regular_files(directory)
    except OSError as e:
        sys.exit(f"listing {directory}: {e}")
    parts = chunks(files, CHUNK_BYTES)
    wray.log(f"wordcount: {len(parts)} map tasks")

    level = [count_words.remote(c) for c in parts]
    while len(level) > 1:
        nxt = []
        for k in range(0, len(level), 2):
            pair = level[k : k + 2]
            nxt.append(merge.remote(pair[0], pair[1]) if len(pair) == 2 else pair[0])
        level = nxt

    counts: Counts = [tuple(wc) for wc in wray.get(level[0])] if level else []  # type: ignore[misc]
    total = sum(n for _, n in counts)
    for word, n in top(counts, TOP):
        print(f"{n}\t{word}")
    print(f"total\t{total}")
