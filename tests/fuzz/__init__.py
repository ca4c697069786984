"""Fuzz suite: every decoder, tool, parser and batch table against hostile input (issue 6).

The generators in :mod:`tests.fuzz.gen` are written once against a tiny :class:`Source`
interface and driven two ways: by Hypothesis (``tests/fuzz/test_*.py``, shrinking and
``@example`` regressions, the CI profile) and by a seeded ``random.Random`` loop
(``python -m tests.fuzz.run_long``, the million-input run).
"""
