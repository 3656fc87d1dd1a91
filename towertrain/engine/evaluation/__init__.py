"""Evaluation: the evaluator, when it runs, how much it reads, inference."""
