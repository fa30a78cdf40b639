"""dnnq-bench (python -P -m dnnq.bench): a benchdnn-style driver; `dnnq-bench --help` lists
every kind, built-in set, setting and option (dnnq.bench.cli builds it from the tables the
parser reads).  This module runs the problems and prints / writes the results."""
import csv
import os
import sys

from dnnq.bench.cli import UsageError, help_text, parse_args, repro  # noqa: F401
from dnnq.bench.registry import PEERS, Env, Unchecked, load_kinds

_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI", "avx512_core_amx": "AVX512_CORE_AMX"}


def _onednn(peer_isa, no_peers):
    """(dnnq.testing, "") when oneDNN loads, else (None, why).  oneDNN reads its ISA cap once,
    when its first primitive is created: set it before."""
    if no_peers:
        return None, "--no-peers"
    import dnnq
    cap = _ONEDNN_ISA[dnnq.get_effective_cpu_isa()] if peer_isa == "same" else peer_isa.upper()
    os.environ["ONEDNN_MAX_CPU_ISA"] = cap
    import dnnq.testing as bridge
    if not bridge.available():
        return None, "not installed"
    return bridge, ""


class Progress:
    """``[3/8] --matmul 128x768:768x3072`` on one stderr line, only when stderr is a tty."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.stream = total, stream
        self.on = total > 1 and stream.isatty()
        self.width = 0

    def show(self, i, label):
        if self.on:
            done = int(20 * i / self.total)
            text = f"[{'#' * done}{'.' * (20 - done)}] {i}/{self.total} {label}"
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            self.stream.flush()

    def clear(self):
        if self.on and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def _plot(path, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    rows = [r for r in rows if r.get("dnnq_us")]
    names = ["dnnq"] + [p for p in PEERS if any(r.get(f"{p}_us") for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows) + 2), 4.5))
    width = 0.8 / max(1, len(names))
    x = np.arange(len(rows))
    for j, name in enumerate(names):
        gops = [r["ops"] / (r[f"{name}_us"] * 1e3) if r.get(f"{name}_us") else 0 for r in rows]
        ax.bar(x + (j - (len(names) - 1) / 2) * width, gops, width, label=name)
    ax.set_xticks(x, [r["problem"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("GOPS (higher is better)")
    ax.set_title(rows[0]["title"] if rows else "dnnq-bench")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _bind_threads_and_reexec():
    """With no OMP_PROC_BIND in the environment, start the program again with OpenMP's
    threads bound one per core (OMP_PROC_BIND=true, OMP_PLACES=cores), for dnnq and its peers
    alike.  Unbound, the kernel scheduler moves the threads between the cores (and their L2)
    from process to process: MobileNet's 64-channel stride-2 depthwise (nchw, 2 threads) ran
    24 us in some processes and 35 us in others, 24 us in every one bound.  The variables are
    read when the OpenMP runtime loads, so the process starts again; OMP_PROC_BIND=false
    keeps the threads unbound."""
    if "OMP_PROC_BIND" in os.environ or not sys.platform.startswith("linux"):
        return
    env = dict(os.environ, OMP_PROC_BIND="true")
    env.setdefault("OMP_PLACES", "cores")
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError:  # run unbound
        pass


def cli():
    """The program (`python -m dnnq.bench`, `dnnq-bench`): threads bound, then main().  Only
    here: main() called from other code never starts its process again."""
    _bind_threads_and_reexec()
    return main()


def format_table(header, rows, right=()):
    """Lines of a table whose columns are as wide as their widest cell; the columns numbered
    in ``right`` are right-aligned, the last one is not padded."""
    rows = [header] + rows
    n = max(len(r) for r in rows)
    rows = [list(r) + [""] * (n - len(r)) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    out = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        cells[-1] = r[-1] if n - 1 not in right else cells[-1]
        out.append("  ".join(cells).rstrip())
    return out


def _check_text(k, case, row):
    """(text, failed, unchecked) of one --mode=C check."""
    try:
        equal, total, note = k.check(case)
    except Unchecked as exc:
        row["status"] = "UNCHECKED"
        return f"UNCHECKED: {exc}", False, True
    ok = equal == total
    row["status"] = "PASSED" if ok else "FAILED"
    how = ("as oneDNN's (an f32 layer's bound)" if note.startswith("f32 layer")
           else "bit-identical to oneDNN")
    return (f"{'PASSED' if ok else 'FAILED'}: {equal} of {total} elements {how}" +
            (f" ({note})" if note else "")), not ok, False


def _timed_cells(k, case, times, row, ratios):
    """The timing table's cells of one problem (after the label and kernel) and whether its
    results differ from oneDNN's."""
    t = times["dnnq"]
    row.update(dnnq_us=t * 1e6, gops=case.ops / t / 1e9)
    cells = [f"{t * 1e6:.1f}", f"{case.ops / t / 1e9:.0f}"]
    for peer in PEERS:
        tp = times.get(peer, "not measured")
        if isinstance(tp, str):
            cells += [tp, "-"]
            row[f"{peer}_note"] = tp
        else:
            ratios[peer].append(t / tp)
            row.update({f"{peer}_us": tp * 1e6, f"{peer}_ratio": t / tp})
            cells += [f"{tp * 1e6:.1f}", f"{t / tp:.2f}"]
    notes, differ = list(case.notes), False
    if case.reference is not None and not isinstance(case.reference, str):
        try:
            equal, total, _ = k.check(case)
            if equal != total:
                differ = True
                notes.append(f"RESULTS DIFFER ({total - equal} of {total})")
                row["status"] = "DIFFER"
            else:
                row["status"] = "same"
        except Unchecked as exc:
            notes.append(str(exc))
    row["notes"] = "; ".join(notes)
    return cells + [", ".join(notes)], differ


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    kinds = load_kinds()
    if "-h" in argv or "--help" in argv:
        print(help_text(kinds))
        return 0
    try:
        problems, opts = parse_args(argv, kinds)
        if opts["plot"]:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise UsageError("--plot needs matplotlib, which is not installed "
                                 "(pip install matplotlib); nothing was run") from None
    except UsageError as exc:
        print(f"dnnq-bench: error: {exc}", file=sys.stderr)
        return 2
    import numpy as np

    import dnnq
    if opts["threads"]:
        dnnq.set_num_threads(int(opts["threads"]))
        os.environ["OMP_NUM_THREADS"] = str(opts["threads"])
    onednn, absent = _onednn(opts["peer-isa"], opts["no-peers"])
    env = Env(rng=np.random.default_rng(0), onednn=onednn, onednn_absent=absent,
              threads=dnnq.get_num_threads(), use_torch=not opts["no-peers"])
    title = (f"dnnq {dnnq.__version__}  isa={dnnq.get_effective_cpu_isa()}  "
             f"threads={dnnq.get_num_threads()}  "
             f"OMP_PROC_BIND={os.environ.get('OMP_PROC_BIND', '(unset)')}")
    peer_line = (f"oneDNN {'.'.join(map(str, onednn.version()))} "
                 f"(ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '')}, "
                 f"effective {onednn.cpu_isa()})" if onednn else f"oneDNN: {absent}")
    print(f"{title}  peers: {peer_line}")
    for name in dict.fromkeys(p[0] for p in problems):
        k = kinds[name]
        defaults = " ".join(f"--{s}={v}" for s, v in k.defaults.items() if s != "mode")
        print(f"--{name} default problem configuration: {k.summary}\n    = {defaults}")
    timed_any = any(p[3]["mode"] == "P" for p in problems)
    if timed_any:
        print(f"timing ({opts['clock']} clock): fastest batch of 3 interleaved rounds (dnnq, "
              "peers) of 5 batches each; dnnq through execute(), oneDNN with its argument "
              "array built once (execute + stream wait); ratio = dnnq time / peer time")
    labels = [repro(kind, desc, given) for kind, desc, _, _, given in problems]
    rows, failures, no_reference = [], 0, 0
    timed, checked = [], []          # table rows
    ratios = {p: [] for p in PEERS}
    progress = Progress(len(problems))
    min_time = float(opts["min-time"])
    from dnnq.bench import timing
    timing.set_clock(opts["clock"])
    done = 0
    try:
        for (kind, desc, parsed, settings, given), label in zip(problems, labels):
            progress.show(done, label)
            k = kinds[kind]
            mode = settings["mode"]
            row = {"problem": label, "kind": kind, "descriptor": desc, "mode": mode,
                   "title": title}
            case = None
            try:
                case = k.create(parsed, settings, env)
                row.update(kernel=case.kernel, ops=case.ops)
                if mode == "C":
                    text, failed, unchecked = _check_text(k, case, row)
                    failures += failed
                    no_reference += unchecked
                    checked.append([label, case.kernel, text])
                else:
                    cells, differ = _timed_cells(k, case, k.run(case, min_time), row, ratios)
                    failures += differ
                    timed.append([label, case.kernel] + cells)
                rows.append(row)
            except Exception as exc:  # dnnq refused the problem (DnnqError), or a peer failed
                failures += 1
                why = f"{type(exc).__name__}: {exc}"
                rows.append(dict(row, status=why))
                kernel = case.kernel if case is not None else "-"
                if mode == "C":
                    checked.append([label, kernel, why])
                else:
                    timed.append([label, kernel] + ["-"] * (2 + 2 * len(PEERS)) + [why])
            finally:
                if case is not None and case.close is not None:
                    case.close()
            done += 1
    except KeyboardInterrupt:
        progress.clear()
        print(f"interrupted after {done} of {len(problems)} problems", file=sys.stderr)
        failures += 1
    progress.clear()
    if timed:
        # a peer no problem of the run has (a blank cell in every row) gets no columns
        shown = [j for j in range(len(PEERS)) if any(r[4 + 2 * j] not in ("", "-")
                                                     for r in timed)]
        head = ["problem", "kernel", "dnnq us", "GOPS"]
        for j in shown:
            head += [f"{PEERS[j]} us", "ratio"]
        cells = [r[:4] + [c for j in shown for c in r[4 + 2 * j:6 + 2 * j]] + r[-1:]
                 for r in timed]
        print("\n".join(format_table(head + ["notes"], cells,
                                      right=set(range(2, 4 + 2 * len(shown))))))
    if checked:
        if timed:
            print()
        print("\n".join(format_table(["problem", "kernel", "check against oneDNN"], checked)))
    for peer, rs in ratios.items():
        if rs:
            gm = float(np.exp(np.mean(np.log(rs))))
            print(f"geometric mean time ratio dnnq/{peer}: {gm:.3f} over {len(rs)} problems "
                  f"(< 1 means dnnq is faster); max {max(rs):.2f}")
    if no_reference:
        print(f"{no_reference} problem(s) UNCHECKED (no oneDNN result to compare with)")
        if onednn is None:
            failures += 1  # --mode=C without oneDNN checked nothing
    if opts["csv"]:
        cols = ["problem", "kind", "descriptor", "mode", "kernel", "ops", "dnnq_us", "gops"]
        for peer in PEERS:
            cols += [f"{peer}_us", f"{peer}_ratio", f"{peer}_note"]
        cols += ["status", "notes"]
        with open(opts["csv"], "w", newline="") as f:
            w = csv.DictWriter(f, cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    if opts["plot"]:
        _plot(opts["plot"], rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(cli())
