"""Throughput of the demo's int8 encoder (all-MiniLM-L6-v2) on Dask against one process: a
benchmark, not a test (docs/distributed.md quotes its figures).

    python tools/dask_bench.py                      # 20,000 sentences, batch 32
    python tools/dask_bench.py --sentences 2000 --rounds 1
    python tools/dask_bench.py --write-corpus corpus.txt --sentences 20000   # just the corpus

Configurations (each sentence embedded once per round; the best round is kept), all with the
model the Dask workers run (dnnq.demo._dask.TextEncoder: static scales, padding skipped in the
per-token steps):

* ``dask 1x1`` / ``dask 2x1``: a LocalCluster of 1 or 2 worker processes with one thread
  each, one dnnq thread per worker, through ``dnnq.distributed.map_batches`` (time from
  submitting the job to the last embedding held on the workers; start-up not included);
* ``process x2``: this process, 2 dnnq threads and 2 BLAS threads, the same batches, each
  split over the threads by sentences (the demo's fastest form; each part padded to its own
  longest sentence, so a few embeddings differ in their last bits) or by rows (the form the
  workers use, whose bits do not depend on the thread count).

Besides sentences per second it prints the CPU time per sentence of all the configuration's
processes and threads (less disturbed than the wall time when other jobs share the machine),
each worker's start-up (model load + primitive creation, ``dnnq.distributed.load_times``), and
which configurations gave the same bits as the rows-split process.  Needs the extras demo and
distributed and the model package (README).
"""
import argparse
import functools
import logging
import os
import sys
import time

import numpy as np


def synthetic_corpus(n, seed=0):
    """n sentences of 1 to 3 of the demo's built-in sentences each (about 15 to 45 tokens)."""
    from dnnq.demo import data
    rng = np.random.default_rng(seed)
    pool = data.SENTENCES + data.CALIBRATION + data.DOCUMENTS + data.QUERIES
    return [" ".join(rng.choice(pool, rng.integers(1, 4), replace=False)) for _ in range(n)]


def _in_process(static, texts, batch, split_sentences):
    import dnnq
    from threadpoolctl import threadpool_limits
    from dnnq.demo._dask import TextEncoder
    before = dnnq.get_num_threads()
    dnnq.set_num_threads(2)
    try:
        with threadpool_limits(limits=2):
            enc = TextEncoder(static)
            enc.encoder.split_sentences = split_sentences
            t0, cpu0 = time.perf_counter(), time.process_time()
            out = np.concatenate([enc(texts[i:i + batch]) for i in range(0, len(texts), batch)])
            return time.perf_counter() - t0, time.process_time() - cpu0, out, None
    finally:
        dnnq.set_num_threads(before)


def _on_dask(static, path, n_workers, batch):
    import dask
    import dask.bag as db
    from distributed import Client, LocalCluster, wait
    import dnnq.distributed as dqd
    from dnnq.demo._dask import TextEncoder, NO_MALLOC_TRIM
    t0 = time.perf_counter()
    with dask.config.set({NO_MALLOC_TRIM: None}), \
            LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                         host="127.0.0.1", dashboard_address=None,
                         silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        started = time.perf_counter() - t0
        make = functools.partial(TextEncoder, static, 1)
        corpus = db.read_text(path, blocksize="16MiB", linedelimiter="\n", encoding="utf-8",
                              errors="surrogateescape")
        values = dqd.map_batches(make, corpus, batch_size=batch, client=client)
        loads = dqd.load_times(make, client=client)
        cpu0 = client.run(time.process_time)
        t0 = time.perf_counter()
        values = client.persist(values)
        wait(values)
        elapsed = time.perf_counter() - t0
        cpu = sum(client.run(time.process_time)[w] - c for w, c in cpu0.items())
        return elapsed, cpu, values.compute(), (started, sorted(loads.values()))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sentences", type=int, default=20000)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--corpus", help="a corpus file (default: a synthetic one, written to a "
                   "temporary file)")
    p.add_argument("--write-corpus", metavar="FILE", help="write the synthetic corpus and exit")
    args = p.parse_args(argv)

    if args.write_corpus:
        with open(args.write_corpus, "w", encoding="utf-8") as f:
            f.write("\n".join(synthetic_corpus(args.sentences)) + "\n")
        return 0

    import tempfile
    import dnnq
    from dnnq.demo import data
    from dnnq.demo.encoder_int8 import Int8Encoder
    from dnnq.demo.model import load_weights, Tokenizer

    tmp = None
    if args.corpus:
        path = args.corpus
        with open(path, encoding="utf-8") as f:
            texts = [ln.strip() for ln in f.read().split("\n")]
        if texts and texts[-1] == "":
            texts.pop()
    else:
        texts = synthetic_corpus(args.sentences)
        tmp = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")
        tmp.write("\n".join(texts) + "\n")
        tmp.close()
        path = tmp.name
    static = Int8Encoder(load_weights(), calibration=Tokenizer()(data.CALIBRATION)).static
    print(f"{len(texts)} sentences, batch {args.batch}, {os.cpu_count()} cores, dnnq "
          f"{dnnq.__version__} ({dnnq.get_effective_cpu_isa()}); load average before: "
          f"{os.getloadavg()[0]:.1f}")

    configs = {
        "dask 1x1": lambda: _on_dask(static, path, 1, args.batch),
        "dask 2x1": lambda: _on_dask(static, path, 2, args.batch),
        "process x2, rows split": lambda: _in_process(static, texts, args.batch, False),
        "process x2, sentences split": lambda: _in_process(static, texts, args.batch, True),
    }
    best, cpu, results, extra = {}, {}, {}, {}
    try:
        for rnd in range(args.rounds):  # rounds interleave the configurations
            for name, run in configs.items():
                seconds, cpu_s, out, info = run()
                best[name] = min(best.get(name, float("inf")), seconds)
                cpu[name] = min(cpu.get(name, float("inf")), cpu_s)
                results[name], extra[name] = out, info or extra.get(name)
                print(f"  round {rnd + 1} {name:<28s} {len(texts) / seconds:8.1f} sentences/s, "
                      f"{1e3 * cpu_s / len(texts):5.2f} CPU ms/sentence (load average "
                      f"{os.getloadavg()[0]:.1f})", flush=True)
    finally:
        if tmp is not None:
            os.unlink(tmp.name)

    print(f"\nbest of {args.rounds} round(s): sentences/s, CPU ms per sentence (all the "
          "configuration's processes and threads; less disturbed by other jobs than the wall "
          "time):")
    for name in configs:
        line = f"  {name:<28s} {len(texts) / best[name]:8.1f} {1e3 * cpu[name] / len(texts):6.2f}"
        if extra.get(name):
            started, loads = extra[name]
            line += (f"   (cluster start {started:.1f} s; per-worker start-up "
                     + ", ".join(f"{s:.2f} s" for s in loads) + ")")
        print(line)
    r = {k: len(texts) / v for k, v in best.items()}
    print(f"  dask 2x1 / dask 1x1: {r['dask 2x1'] / r['dask 1x1']:.2f}x; dask 2x1 / process "
          f"x2: {r['dask 2x1'] / r['process x2, sentences split']:.2f}x (sentences split), "
          f"{r['dask 2x1'] / r['process x2, rows split']:.2f}x (rows split)")
    ref = results["process x2, rows split"].view(np.uint32)
    same = [k for k in ("dask 1x1", "dask 2x1") if np.array_equal(results[k].view(np.uint32), ref)]
    print(f"  same bits as the rows-split process: {', '.join(same) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
