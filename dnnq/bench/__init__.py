"""benchdnn-style driver: `python -m dnnq.bench --matmul 128x768:768x3072 ...`."""
