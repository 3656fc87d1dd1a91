"""Runnable examples of the library API (each: python examples/NAME.py; TOWERTRAIN_TINY=1
runs it at tiny size, as the tests do)."""
