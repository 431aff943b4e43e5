"""The pure functions of the word count, natively (as the Rust example's
unit tests): ``python3 -m unittest`` in this directory, with
``sdk/python`` on ``PYTHONPATH``."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "sdk", "python"))

import wordcount as wc  # noqa: E402


class Words(unittest.TestCase):
    def test_words_are_runs_of_word_bytes(self):
        self.assertEqual(wc.words(b"fn main() { let x_1 = 2; }"), [b"fn", b"main", b"let", b"x_1", b"2"])
        self.assertEqual(wc.words("cafés naïve".encode()), [b"caf", b"s", b"na", b"ve"])
        self.assertEqual(wc.words(b"Word word"), [b"Word", b"word"])
        self.assertEqual(wc.words(b"  ,;\n"), [])

    def test_counts_are_sorted_by_word(self):
        c = {}
        wc.add_counts(c, b"b a b")
        wc.add_counts(c, b"c b")
        self.assertEqual(wc.sorted_counts(c), [("a", 1), ("b", 3), ("c", 1)])

    def test_merge_adds_equal_words(self):
        a = [("a", 1), ("c", 2)]
        b = [("b", 5), ("c", 1), ("d", 1)]
        self.assertEqual(wc.merge_counts(a, b), [("a", 1), ("b", 5), ("c", 3), ("d", 1)])

    def test_top_orders_by_count_then_word(self):
        counts = [("b", 2), ("a", 2), ("c", 9), ("d", 1)]
        self.assertEqual(wc.top(counts, 3), [("c", 9), ("a", 2), ("b", 2)])

    def test_chunks_close_at_the_target_and_keep_order(self):
        files = [("a", 600), ("b", 600), ("c", 5000), ("d", 1)]
        self.assertEqual(wc.chunks(files, 1000), [["a", "b"], ["c"], ["d"]])


if __name__ == "__main__":
    unittest.main()
