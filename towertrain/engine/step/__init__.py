"""The step: towers, their outputs, accumulation and what traces across towers."""
