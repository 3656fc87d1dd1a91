"""The run shell: the loop, its watchdog, the header, the benchmark log, the run handles."""
