"""The run shell: the loop, the header, the benchmark log, model checks."""
