"""Runnable benchmarks: each bench_<name>.py has a main() printing `RATIO name project bound ratio` lines.

`python -m benchmarks` (or `make bench`) runs them all and prints one table.
"""
