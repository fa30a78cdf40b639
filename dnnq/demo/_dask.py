"""``dnnq-demo --corpus FILE --dask local:N`` (or ``--dask tcp://HOST:PORT``): the int8
encoder over a text corpus on a Dask cluster through :func:`dnnq.distributed.map_batches`,
with the throughput and, for a sample of batches, the check that every embedding equals the
single-process result bit for bit.  docs/distributed.md describes it.

:class:`TextEncoder` is the model the workers run: a batch of texts (one per corpus line) ->
(batch, 384) float32 embeddings, rejecting empty, over-long and non-UTF-8 lines by row
(:class:`dnnq.distributed.RowError`)."""
import functools
import importlib.util
import logging
import os
import sys
import time

import numpy as np

from dnnq.demo.model import DemoError, MAX_TOKENS

# batches checked against the single-process encoder: the first, the last, and some between
SAMPLE_BATCHES = 8
# Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
# adaptive mmap threshold: every temporary over 128 KB is then mapped and page-faulted anew,
# +40% CPU time for this encoder.  Set to None, the variable is not set (its default).
NO_MALLOC_TRIM = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


class TextEncoder:
    """The demo's int8 encoder as a Dask model: ``TextEncoder(static, threads)(texts)``.

    ``static``: the activation scales (``Int8Encoder.static``) chosen once by the caller, so
    that every worker quantizes with the very same scales; ``threads``: dnnq's threads in
    this process (None: leave them).  Building it also runs one batch of the built-in
    sentences, which creates the primitives of a typical batch.  A sentence's embedding
    depends on its batch only through the batch's padded length, whatever the threads."""

    def __init__(self, static, threads=None, warm_up=32):
        import dnnq
        from dnnq.demo import data
        from dnnq.demo.encoder_int8 import Int8Encoder
        from dnnq.demo.model import load_weights, Tokenizer
        if threads:
            dnnq.set_num_threads(threads)
        self.tok = Tokenizer()
        # skip_padding: the per-token steps on the real tokens only (a third less work, the
        # same bits); not split by sentences: that trims each part to its own longest
        # sentence, and the float32 attention's sums over the padded length (numpy's BLAS)
        # then round differently for some sentences -- the bits would follow the threads
        self.encoder = Int8Encoder(load_weights(), calibration=static, skip_padding=True,
                                   split_sentences=False)
        if warm_up:
            self(data.SENTENCES[:warm_up])

    def clean(self, texts):
        """The stripped texts, or RowError naming the bad ones."""
        from dnnq.distributed import RowError
        out, bad = [], {}
        for i, t in enumerate(texts):
            if isinstance(t, bytes):
                try:
                    t = t.decode("utf-8")
                except UnicodeDecodeError as e:
                    bad[i] = f"not UTF-8 text (byte 0x{t[e.start]:02x} at offset {e.start})"
                    continue
            elif not isinstance(t, str):
                bad[i] = f"expected text (str or UTF-8 bytes); got {type(t).__name__}"
                continue
            try:
                t.encode("utf-8")  # lone surrogates: bytes read with errors="surrogateescape"
            except UnicodeEncodeError as e:
                code = ord(t[e.start])
                byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else \
                    f"U+{code:04X}"
                bad[i] = f"not UTF-8 text ({byte} at character {e.start})"
                continue
            t = t.strip()
            if not t:
                bad[i] = "empty text"
                continue
            out.append((i, t))
        for j, n in self.tok.too_long([t for _, t in out]):
            bad[out[j][0]] = f"{n} tokens; the model takes at most {MAX_TOKENS}"
        if bad:
            raise RowError(bad)
        return [t for _, t in out]

    def __call__(self, texts):
        return self.encoder.encode(*self.tok(self.clean(texts)))


def read_corpus(path):
    """The corpus's lines as bytes (as ``dask.bag.read_text(..., linedelimiter="\\n")`` cuts
    them), for the row count and the sample the client checks."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DemoError(f"--corpus {path}: cannot read it ({e.strerror})") from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise DemoError(f"--corpus {path}: the file is empty (expected one text per line)")
    return lines


def parse_dask(spec):
    """``local:N`` -> ("local", N); ``tcp://HOST:PORT`` -> ("address", spec)."""
    if spec.startswith("local:"):
        try:
            n = int(spec[len("local:"):])
        except ValueError:
            n = 0
        if n < 1:
            raise DemoError(f"--dask {spec}: expected local:N with N a positive number of "
                            "worker processes")
        return "local", n
    if spec.startswith("tcp://") and ":" in spec[len("tcp://"):]:
        return "address", spec
    raise DemoError(f"--dask {spec}: expected local:N (a LocalCluster of N worker processes) "
                    "or tcp://HOST:PORT (a running scheduler)")


def _need_dask():
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
        import dnnq.distributed  # noqa: F401
    except ImportError:
        raise DemoError("--dask needs Dask: pip install 'dnnq[distributed]' (dask[distributed] "
                        "and pyarrow)") from None


def _sample_batches(n_rows, batch, errors):
    """Up to SAMPLE_BATCHES batch indices without rejected rows: the first, the last, the
    rest spread between them (fixed seed)."""
    n_batches = -(-n_rows // batch)
    clean = [k for k in range(n_batches)
             if all(e is None for e in errors[k * batch:(k + 1) * batch])]
    if len(clean) <= SAMPLE_BATCHES:
        return clean
    rng = np.random.default_rng(0)
    middle = rng.choice(clean[1:-1], SAMPLE_BATCHES - 2, replace=False).tolist()
    return sorted([clean[0], clean[-1], *middle])


def run(args):
    """The --dask job; returns the exit status (1 when the check finds a difference)."""
    if args.batch < 1:
        raise DemoError(f"--batch {args.batch}: expected a positive number of sentences")
    if not args.dask:
        raise DemoError("--corpus and --out go with --dask local:N or --dask tcp://HOST:PORT")
    if not args.corpus:
        raise DemoError("--dask needs --corpus FILE (one text per line)")
    kind, where = parse_dask(args.dask)
    _need_dask()
    import dask
    from distributed import Client, LocalCluster
    from dnnq.demo import data
    from dnnq.demo.encoder_int8 import Int8Encoder
    from dnnq.demo.model import load_weights, Tokenizer

    lines = read_corpus(args.corpus)
    # the scales are chosen here, once, and shipped: every worker quantizes alike
    t0 = time.perf_counter()
    weights = load_weights()
    static = Int8Encoder(weights, calibration=Tokenizer()(data.CALIBRATION)).static
    calibration_s = time.perf_counter() - t0

    if kind == "local":
        threads = max(1, (os.cpu_count() or 1) // where)  # dnnq's, per worker
        with dask.config.set({NO_MALLOC_TRIM: None}):  # see docs/distributed.md, Sizing
            cluster = LocalCluster(n_workers=where, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        threads, cluster = None, None  # the workers' own (Dask sets OMP_NUM_THREADS=1)
        try:
            client = Client(where, timeout="20s")
        except OSError as e:
            raise DemoError(f"--dask {where}: cannot reach the scheduler ({e})") from None
    try:
        return _embed_corpus(client, args, lines, static, threads, calibration_s,
                             weights.config)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _embed_corpus(client, args, lines, static, threads, calibration_s, config):
    import dask.bag as db
    from distributed import progress, wait
    import dnnq
    import dnnq.distributed as dqd
    from dnnq.demo.model import MODEL_PACKAGE

    make_model = functools.partial(TextEncoder, static, threads)
    corpus = db.read_text(args.corpus, blocksize="16MiB", linedelimiter="\n", encoding="utf-8",
                          errors="surrogateescape")
    t0 = time.perf_counter()
    values, errors = dqd.map_batches_with_errors(make_model, corpus, batch_size=args.batch,
                                                 client=client)
    setup_s = time.perf_counter() - t0
    loads = dqd.load_times(make_model, client=client)

    t0 = time.perf_counter()
    values, errors = client.persist([values, errors])
    if sys.stdout.isatty():
        progress(values, errors)   # Dask's console progress bar
    wait([values, errors])
    elapsed = time.perf_counter() - t0
    errs = errors.compute()        # one message or None per row (the embeddings stay put)
    if args.out:
        dqd.to_parquet(values, args.out, errors=errors, column="embedding", client=client)

    # the check: sample batches embedded here, in this process, with its own threads
    sample = _sample_batches(len(lines), args.batch, errs)
    local = TextEncoder(static, None, warm_up=0)
    same = rows = 0
    for k in sample:
        lo, hi = k * args.batch, min((k + 1) * args.batch, len(lines))
        want = local([ln.decode("utf-8", "surrogateescape") for ln in lines[lo:hi]])
        got = values[lo:hi].compute()
        same += int(np.sum(np.all(got.view(np.uint32) == want.view(np.uint32), axis=1)))
        rows += hi - lo

    workers = client.nthreads()
    n_bad = sum(e is not None for e in errs)
    print(f"all-MiniLM-L6-v2 from {MODEL_PACKAGE} ({config.layers} layers), int8 through dnnq "
          f"{dnnq.__version__}; Dask cluster {client.scheduler.address}: {len(workers)} "
          f"worker(s), {sum(workers.values())} thread(s) in all"
          + (f", dnnq {threads} thread(s) per worker" if threads else ""))
    if args.dask.startswith("local:") and importlib.util.find_spec("bokeh"):
        print(f"dashboard (while it ran): {client.dashboard_link}")
    print(f"scales calibrated once in this process: {calibration_s:.2f} s; map_batches set-up "
          f"(model loaded on the workers, partitions counted, shape probed): {setup_s:.2f} s")
    if loads:
        print("per-worker start-up (model load + primitive creation): "
              + ", ".join(f"{s:.2f} s" for s in sorted(loads.values())))
    print(f"corpus {args.corpus}: {len(lines)} line(s), batch {args.batch}: "
          f"{len(lines) - n_bad} embedded, {n_bad} rejected by row")
    for i in [i for i, e in enumerate(errs) if e is not None][:5]:
        print(f"  line {i + 1}: {errs[i]}")
    print(f"throughput: {len(lines)} lines in {elapsed:.2f} s = {len(lines) / elapsed:.1f} "
          "sentences/s")
    if args.out:
        print(f"embeddings written to {args.out} (Parquet: row, embedding, error)")
    verdict = "every embedding equals" if same == rows else \
        f"NOT every embedding equals ({rows - same} differ from)"
    print(f"check: {len(sample)} batch(es), {rows} sentence(s) re-embedded in this process "
          f"({dnnq.get_num_threads()} dnnq thread(s)): {verdict} the single-process result "
          "bit for bit")
    return 0 if same == rows else 1
