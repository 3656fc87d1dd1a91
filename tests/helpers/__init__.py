"""Shared pieces of the test suite (on sys.path through pytest's pythonpath = tests)."""
