"""``dnnq-demo`` / ``python -m dnnq.demo``: all-MiniLM-L6-v2 in float32 and int8 through dnnq,
with accuracy, retrieval and throughput against the installed peers.  See docs/demo.md."""
import argparse
import sys
import time

import numpy as np

from dnnq.demo import data
from dnnq.demo.model import DemoError, MAX_TOKENS, MODEL_PACKAGE


ROUNDS = 3


class Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal; on a pipe or a file,
    one line per step so logs stay readable)."""

    def __init__(self, total, stream=None, width=28):
        stream = sys.stderr if stream is None else stream
        self.total, self.done, self.stream, self.width = total, 0, stream, width
        self.tty = stream.isatty()

    def step(self, what):
        self.done = min(self.done + 1, self.total)
        fill = self.width * self.done // self.total
        bar = "#" * fill + "." * (self.width - fill)
        line = f"[{bar}] {self.done:2d}/{self.total} {what}"
        if self.tty:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _read_sentences(path):
    try:
        with open(path, encoding="utf-8") as f:
            lines = [ln.strip() for ln in f]
    except OSError as e:
        raise DemoError(f"--sentences {path}: cannot read it ({e.strerror})") from None
    except UnicodeDecodeError:
        raise DemoError(f"--sentences {path}: not UTF-8 text") from None
    sentences = [ln for ln in lines if ln]
    if not sentences:
        raise DemoError(f"--sentences {path}: the file has no sentences (one per line; blank "
                        "lines are skipped)")
    return sentences


def _limit_threads(n, torch_too, restore):
    """Same threads for every engine: dnnq, numpy's BLAS, PyTorch (ONNX Runtime takes it at
    session creation).  Appends to ``restore`` what undoes it; returns a note when numpy's
    BLAS could not be limited."""
    import dnnq
    before = dnnq.get_num_threads()
    restore.append(lambda: dnnq.set_num_threads(before))
    dnnq.set_num_threads(n)
    if torch_too:
        import torch
        torch_before = torch.get_num_threads()
        restore.append(lambda: torch.set_num_threads(torch_before))
        torch.set_num_threads(n)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # only possible before PyTorch's first parallel work
            pass
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return ("note: threadpoolctl is not installed, so numpy's BLAS uses its own thread count "
                "(pip install threadpoolctl)")
    restore.append(threadpool_limits(limits=n).restore_original_limits)
    return None


def _batches(texts, size):
    return [texts[i:i + size] for i in range(0, len(texts), size)]


def _embed_all(enc, tok, texts, batch):
    return np.concatenate([enc.encode(*tok(b)) for b in _batches(texts, batch)])


def _throughput(enc, tokenized, n_sentences, min_time):
    """Sentences per second over the pre-tokenized batches (one warm-up pass first)."""
    for ids, mask in tokenized:
        enc.encode(ids, mask)
    passes, t0 = 0, time.perf_counter()
    while True:
        for ids, mask in tokenized:
            enc.encode(ids, mask)
        passes += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time and passes >= 2:
            return passes * n_sentences / elapsed


def _plot(path, engines, rates, batch, subtitle):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (f"note: --plot {path} skipped: matplotlib is not installed "
                "(pip install matplotlib)")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, b in zip(axes, (1, batch)):
        names = [e for e in engines if (e, b) in rates]
        vals = [rates[e, b] for e in names]
        colors = ["tab:orange" if n.startswith("dnnq") else "tab:blue" for n in names]
        ax.barh(names[::-1], vals[::-1], color=colors[::-1])
        ax.set_xlabel("sentences / s")
        ax.set_title(f"batch {b}")
        for y, v in enumerate(vals[::-1]):
            ax.text(v, y, f" {v:.0f}", va="center", fontsize=8)
    fig.suptitle(f"all-MiniLM-L6-v2 throughput, same process ({subtitle})")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        return f"note: --plot {path}: cannot write it ({e.strerror})"
    return f"plot written to {path}"


def run(args):
    """The demo; the thread settings it changes are put back when it returns."""
    restore = []
    try:
        return _run(args, restore)
    finally:
        for undo in reversed(restore):
            undo()


def _run(args, restore):
    import dnnq
    from dnnq.demo.model import load_weights, Tokenizer
    from dnnq.demo.encoder_f32 import Float32Encoder
    from dnnq.demo.encoder_int8 import Int8Encoder
    from dnnq.demo import peers

    if args.batch < 1:
        raise DemoError(f"--batch {args.batch}: expected a positive number of sentences")
    threads = args.threads if args.threads else dnnq.get_num_threads()
    if threads < 1:
        raise DemoError(f"--threads {threads}: expected a positive number")
    sentences = _read_sentences(args.sentences) if args.sentences else list(data.SENTENCES)

    weights = load_weights()
    tok = Tokenizer()
    out = []  # report lines, printed at the end (the progress bar owns stderr meanwhile)
    for i, n in tok.too_long(sentences):
        out.append(f"note: sentence {i + 1} has {n} tokens; truncated to the model's limit of "
                   f"{MAX_TOKENS}")
    have_torch = not args.no_peers and peers.torch_available()
    have_ort = not args.no_peers and peers.onnxruntime_available()
    note = _limit_threads(threads, have_torch, restore)
    if note:
        out.append(note)

    engines = []
    n_steps = 3 + ROUNDS * (2 + 2 * have_torch + 2 * have_ort) + 1
    bar = Progress(n_steps)
    bar.step("model loaded")
    f32 = Float32Encoder(weights)
    calib = None if args.dynamic else tok(data.CALIBRATION)
    # like-for-like by default: every engine computes the padded rows (see docs/demo.md)
    int8 = Int8Encoder(weights, calibration=calib, dynamic=args.dynamic,
                       skip_padding=args.skip_padding)
    bar.step("int8 model: weights quantized" + ("" if args.dynamic else ", activations calibrated"))
    engines += [int8, f32]
    if have_torch:
        engines += [peers.TorchEncoder(weights), peers.TorchEncoder(weights, int8=True)]
    if have_ort:
        engines += [peers.OnnxRuntimeEncoder(weights, threads),
                    peers.OnnxRuntimeEncoder(weights, threads, int8=True)]

    # accuracy: every sentence, plus the retrieval task's queries and documents
    texts = sentences + data.QUERIES + data.DOCUMENTS
    emb = {}
    for e in (f32, int8):
        emb[e.name] = _embed_all(e, tok, texts, args.batch)
    bar.step("embeddings computed")
    ref, q8 = emb[f32.name], emb[int8.name]
    cos = np.sum(ref * q8, axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(q8, axis=1))
    n_s, n_q = len(sentences), len(data.QUERIES)

    def nearest(e):
        q, d = e[n_s:n_s + n_q], e[n_s + n_q:]
        return np.argmax(q @ d.T, axis=1)
    near32, near8 = nearest(ref), nearest(q8)

    # throughput, same process, same threads: ROUNDS rounds over all the engines, the best
    # round of each kept (a busy machine slows whichever engine runs at that moment; the
    # rounds give every engine its quiet moments)
    rates = {}
    timed = {1: [tok(b) for b in _batches(sentences[:16], 1)],
             args.batch: [tok(b) for b in _batches(sentences, args.batch)]}
    counts = {1: min(16, len(sentences)), args.batch: len(sentences)}
    for rnd in range(ROUNDS):
        for e in engines:
            for b in sorted({1, args.batch}):
                r = _throughput(e, timed[b], counts[b], args.min_time)
                rates[e.name, b] = max(rates.get((e.name, b), 0.0), r)
            bar.step(f"round {rnd + 1}/{ROUNDS}: timed {e.name}")
    if args.plot:
        plot_note = _plot(args.plot, [e.name for e in engines], rates, args.batch,
                          f"{threads} thread(s), {dnnq.get_effective_cpu_isa()}")
    bar.step("done")
    bar.close()

    # report
    mode = "dynamic (per batch)" if args.dynamic else \
        f"static (calibrated on {len(data.CALIBRATION)} built-in sentences)"
    print(f"all-MiniLM-L6-v2 from {MODEL_PACKAGE}: {weights.config.layers} layers, hidden "
          f"{weights.config.hidden}, {weights.config.heads} heads, feed-forward "
          f"{weights.config.intermediate}")
    print(f"dnnq {dnnq.__version__}, ISA {dnnq.get_effective_cpu_isa()}, {threads} thread(s); "
          f"int8: 36 linear layers as dnnq InnerProduct (s8 weights per output channel, u8 "
          f"activations per tensor, {mode}); LayerNorm, softmax and the attention matmuls in "
          "float32")
    for line in out:
        print(line)
    print()
    print(f"accuracy over {len(texts)} texts ({n_s} sentences, {n_q} queries, "
          f"{len(data.DOCUMENTS)} documents):")
    print(f"  cosine int8 vs float32: min {cos.min():.4f}, mean {cos.mean():.4f}")
    same = int(np.sum(near32 == near8))
    right = int(np.sum(near32 == np.array(data.ANSWERS)))
    print(f"  retrieval: int8 ranks the same nearest document as float32 for {same}/{n_q} "
          f"queries ({'all' if same == n_q else 'NOT all'}); float32 finds the intended "
          f"document for {right}/{n_q}")
    for e in engines[2:]:
        pe = _embed_all(e, tok, texts[:n_s], args.batch)
        pc = np.sum(pe * ref[:n_s], axis=1)
        print(f"  {e.name:<26s} cosine to float32 numpy: min {pc.min():.4f}, mean {pc.mean():.4f}")
    print()
    print(f"throughput (sentences/s, best of {ROUNDS} rounds; batch 1 over the first {counts[1]} "
          f"sentences, batch {args.batch} over all {counts[args.batch]}, padded to each batch's "
          "longest):")
    print(f"  {'engine':<26s} {'batch 1':>9s} {'ms/sent':>8s} {'batch ' + str(args.batch):>9s}")
    for e in engines:
        r1, rb = rates[e.name, 1], rates[e.name, args.batch]
        print(f"  {e.name:<26s} {r1:9.1f} {1e3 / r1:8.2f} {rb:9.1f}")
    rb = {e.name: rates[e.name, args.batch] for e in engines}
    r1 = {e.name: rates[e.name, 1] for e in engines}
    print(f"  dnnq int8 / float32 numpy at batch {args.batch}: {rb[int8.name] / rb[f32.name]:.2f}x")
    if have_torch:
        print(f"  dnnq int8 / PyTorch dynamic int8 at batch {args.batch}: "
              f"{rb[int8.name] / rb['PyTorch dynamic int8']:.2f}x")
        print(f"  batch 1 latency: dnnq int8 {1e3 / r1[int8.name]:.2f} ms, PyTorch float32 "
              f"{1e3 / r1['PyTorch float32']:.2f} ms")
    if have_ort:
        print(f"  dnnq int8 / ONNX Runtime dynamic int8 at batch {args.batch}: "
              f"{rb[int8.name] / rb['ONNX Runtime dynamic int8']:.2f}x")
    missing = [n for n, ok in (("torch==2.13.0", have_torch), ("onnx onnxruntime", have_ort))
               if not ok]
    if missing and not args.no_peers:
        print(f"  (peers not installed: pip install {' '.join(missing)})")
    if args.plot:
        print(plot_note)
    print(f"mean cosine int8 vs f32: {cos.mean():.4f}")
    return 0


def parser():
    p = argparse.ArgumentParser(
        prog="dnnq-demo",
        description="Run the sentence encoder all-MiniLM-L6-v2 in float32 and with every linear "
                    "layer int8 through dnnq; print how close the int8 embeddings stay, whether "
                    "retrieval agrees, and the throughput next to the installed peers (PyTorch "
                    "float32 and dynamic int8, ONNX Runtime float32 and dynamic int8).")
    p.add_argument("--sentences", metavar="FILE", help="UTF-8 text file, one sentence per line "
                   "(default: the 64 built-in sentences)")
    p.add_argument("--batch", type=int, default=32, help="batch size for accuracy and the large-"
                   "batch throughput (default 32)")
    p.add_argument("--threads", type=int, default=0, help="threads for every engine (default: "
                   "dnnq's, i.e. OMP_NUM_THREADS or all cores)")
    p.add_argument("--dynamic", action="store_true", help="choose activation scales from each "
                   "batch instead of the built-in calibration set")
    p.add_argument("--skip-padding", action="store_true", help="int8: run the per-token steps "
                   "on the real tokens only (less work than the other engines, which compute "
                   "the padded rows; same embeddings)")
    p.add_argument("--plot", metavar="OUT.png", help="write a bar chart of throughput per engine "
                   "(needs matplotlib)")
    p.add_argument("--no-peers", action="store_true", help="time only dnnq int8 and float32 "
                   "numpy, even where PyTorch / ONNX Runtime are installed")
    p.add_argument("--corpus", metavar="FILE", help="with --dask: embed this text file, one "
                   "text per line, on a Dask cluster (docs/distributed.md)")
    p.add_argument("--dask", metavar="local:N|tcp://HOST:PORT", help="with --corpus: a "
                   "LocalCluster of N worker processes, or a running scheduler; prints the "
                   "throughput and checks a sample against this process bit for bit")
    p.add_argument("--out", metavar="DIR", help="with --dask: write the embeddings there as "
                   "Parquet")
    p.add_argument("--min-time", type=float, default=0.3, help=argparse.SUPPRESS)
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["ocr"]:  # the second job: PP-OCRv4 through dnnq.onnx (dnnq/demo/ocr.py)
        from dnnq.demo.ocr import main as ocr_main
        return ocr_main(argv[1:])
    args = parser().parse_args(argv)
    try:
        if args.dask or args.corpus or args.out:
            from dnnq.demo import _dask
            return _dask.run(args)
        return run(args)
    except DemoError as e:
        sys.stderr.write(f"\ndnnq-demo: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("\ndnnq-demo: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
