"""benchdnn-style driver: `dnnq-bench` / `python -P -m dnnq.bench --matmul 128x768:768x3072`.

`dnnq.bench.cli` parses the command line and prints --help, both from the tables of
`dnnq.bench.registry` (the problem kinds, their settings and built-in sets; how to add one:
its docstring and docs/bench.md) and its own run options; `dnnq.bench.__main__` runs the
problems and prints / writes the results; `dnnq.bench.matmul`, `.conv`, `.rnn` register the
kinds; `dnnq.bench.timing.best_time` is the timer shared with the asv suite."""
