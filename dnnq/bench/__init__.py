"""benchdnn-style driver: `dnnq-bench` / `python -P -m dnnq.bench --matmul 128x768:768x3072`.

`dnnq.bench.__main__` parses the command line and prints / writes the results;
`dnnq.bench.registry` holds the problem kinds (how to add one: its docstring);
`dnnq.bench.matmul` registers `--matmul` and `--ip`; `dnnq.bench.timing.best_time` is the
timer shared with the asv suite."""
