"""The process: its runtime settings and its devices."""
