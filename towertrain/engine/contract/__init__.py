"""The model's and the input's contract: checks before any step (up_front),
checks inside the step and their failures in the user's terms (in_step)."""
