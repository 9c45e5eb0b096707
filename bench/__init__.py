"""pathwatch's benchmarks (see bench/README.md); a package so tests can import their pure parts."""
