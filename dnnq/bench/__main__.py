"""dnnq-bench (python -P -m dnnq.bench): a benchdnn-style driver.

    dnnq-bench                                       # embedded default: the BERT-base matmuls
    dnnq-bench --matmul 128x768:768x3072 1x768:768x768
    dnnq-bench --matmul --dt=s8:s8:f32 --attr-scales=src:common:0.25+wei:per_oc \\
        --attr-zero-points=src:common:3 --attr-post-ops=relu 512x768:768x768
    dnnq-bench --ip mb128ic768oc3072 --mode=C        # correctness against oneDNN
    dnnq-bench --threads=2 --csv=out.csv --plot=out.png --batch=FILE

Order, as in benchdnn: a problem kind (--matmul, --ip, ...) selects the kind of the
descriptors after it; a setting (--mode, --dt, --bia-dt, --attr-scales, --attr-zero-points,
--attr-post-ops) applies to every problem after it until changed or --reset.  Settings given
after the last problem apply to every problem that did not get that setting before it (so
`--ip mb128ic768oc3072 --mode=C` checks that problem).  A setting the current kind does not
take, an unknown option or kind, and a malformed descriptor are usage errors (exit 2) found
before anything runs.  --batch=FILE reads options and descriptors from FILE (# comments).

Settings (per problem):
  --mode=P|C          P: time dnnq and its peers (default); C: check dnnq against oneDNN
  --dt=SRC:WEI:DST    data types (u8/s8 sources, s8 weights, u8/s8/s32/f32 destination; an
                      f32 layer: f32:f32:f32, f32:f32:u8, f32:f32:s8, timed against oneDNN's
                      f32 primitive, checked through its quantizing reorder)
  --bia-dt=f32|undef  bias data type (undef: no bias)
  --attr-scales=ARG:MASK[:VALUE][+...]       ARG src/wei/dst, MASK common/per_oc/per_dim_N
  --attr-zero-points=ARG:MASK[:VALUE][+...]
  --attr-post-ops=OP[:ARGS][+...]            relu, linear:A:B, sum:SCALE:ZP, add:f32:per_oc ...
Run options (anywhere on the line):
  --threads=N         threads for dnnq and its peers (default: OMP_NUM_THREADS / all)
  --min-time=SECONDS  timing budget per implementation and problem (default 0.3)
  --clock=wall|cpu    wall: elapsed time (default); cpu: the calling thread's CPU time, with
                      --threads=1 only (time the process spends descheduled on a loaded
                      machine is not counted; cache sharing still is)
  --no-peers          time dnnq alone
  --peer-isa=same|ALL|<oneDNN ISA name>   oneDNN's ISA cap (default: dnnq's level)
  --csv=FILE          also write the results as CSV
  --plot=FILE         bar chart of GOPS per problem and implementation (needs matplotlib)
  --reset             settings back to their defaults
  -h, --help          this text

Threads: run as a program with OMP_PROC_BIND unset, the driver starts again with OpenMP's
threads bound one per core (OMP_PROC_BIND=true, OMP_PLACES=cores) for dnnq and its peers
alike: unbound threads move between the cores from process to process and 2-thread times
swing by 1.5x.  OMP_PROC_BIND=false keeps them unbound.

Timing: dnnq through its public `execute`; oneDNN as a C++ caller runs it (argument array
built once, only dnnl_primitive_execute + dnnl_stream_wait timed); both in this process, same
threads, oneDNN capped at dnnq's ISA level; the fastest batch of interleaved rounds, with a
20 ms pause before each implementation's batches (other runtimes' OpenMP threads spin for a
while after their work and would take the cores from the next one).  A peer
column without a time says why (not installed, refused by oneDNN, n/a for that configuration,
--no-peers).  A progress bar goes to stderr when it is a terminal.  Exit status: 0 success,
1 a check failed, results differ or a problem raised, 2 usage error.
New problem kinds plug in through dnnq.bench.registry.
"""
import csv
import os
import shlex
import sys

from dnnq.bench.registry import PEERS, Env, Unchecked, expand_set, load_kinds

DEFAULT = ["--matmul", "1x768:768x768", "1x768:768x3072", "128x768:768x768",
           "128x768:768x3072", "512x768:768x768", "512x768:768x3072", "512x3072:3072x768",
           "32x512:512x2048"]
_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI", "avx512_core_amx": "AVX512_CORE_AMX"}
#: benchdnn drivers dnnq has no kind for (yet): named in the error message
_BENCHDNN_DRIVERS = ("conv", "deconv", "rnn", "pool", "reorder", "eltwise", "binary", "sum",
                     "concat", "softmax", "lnorm", "bnorm", "shuffle", "resampling", "prelu")
COMMON_SETTINGS = {"mode": "P"}
RUN_OPTIONS = {"threads": None, "min-time": "0.3", "peer-isa": "same", "csv": None,
               "plot": None, "clock": "wall"}
FLAGS = ("no-peers", "reset")


class UsageError(Exception):
    pass


def _expand(argv):
    out = []
    it = iter(argv)
    for a in it:
        if a == "--batch" or a.startswith("--batch="):
            path = a.split("=", 1)[1] if "=" in a else next(it, None)
            if not path:
                raise UsageError("--batch needs a file: --batch=FILE")
            try:
                with open(path) as f:
                    text = f.read()
            except OSError as exc:
                raise UsageError(f"--batch: cannot read {path!r}: {exc.strerror}") from None
            for line in text.splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    out.extend(_expand(shlex.split(line)))
        else:
            out.append(a)
    return out


def parse_args(argv, kinds):
    """Command line -> (problems, run options).  A problem is (kind, descriptor, parsed,
    settings, explicit) with ``settings`` every setting of its kind and ``explicit`` the
    ones the command line gave.  Raises UsageError."""
    argv = _expand(argv)
    opts = dict(RUN_OPTIONS, **{"no-peers": False})
    kind = "matmul"
    explicit = {}     # settings given so far (since the last --reset)
    trailing = {}     # settings given after the last problem
    problems = []
    known_settings = set(COMMON_SETTINGS).union(*(k.settings for k in kinds.values()))

    def add_problem(desc):
        k = kinds[kind]
        try:
            parsed = k.parse(desc)
        except Exception as exc:  # ValueError, DnnqError: a usage error, nothing has run
            raise UsageError(f"--{kind} descriptor {desc!r}: {exc}") from None
        problems.append([kind, desc, parsed, {s: v for s, v in explicit.items()
                                              if s in COMMON_SETTINGS or s in k.settings}])
        trailing.clear()

    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if not a.startswith("--"):
            if a.startswith("-") and a not in ("-h",):
                raise UsageError(f"unknown option {a!r}")
            for desc in expand_set(a) or [a]:  # a built-in set (resnet50, ...) or one problem
                add_problem(desc)
            continue
        key, eq, value = a[2:].partition("=")
        if key in kinds:
            kind = key
            if eq:
                add_problem(value)
        elif key in _BENCHDNN_DRIVERS:
            raise UsageError(f"--{key}: dnnq has no {key} driver yet (available: "
                             f"{', '.join('--' + k for k in kinds)})")
        elif key in FLAGS:
            if eq:
                raise UsageError(f"--{key} takes no value")
            if key == "reset":
                explicit.clear()
                trailing.clear()
            else:
                opts[key] = True
        elif key in known_settings or key in RUN_OPTIONS:
            if not eq:
                if i >= len(argv):
                    raise UsageError(f"--{key} needs a value: --{key}=VALUE")
                value = argv[i]
                i += 1
            if key in RUN_OPTIONS:
                opts[key] = value
                continue
            if key not in COMMON_SETTINGS and key not in kinds[kind].settings:
                takes = [k for k, v in kinds.items() if key in v.settings]
                raise UsageError(f"--{key} does not apply to --{kind} problems (it applies to "
                                 f"{', '.join('--' + k for k in takes)})")
            if key == "mode" and value.upper() not in ("P", "C"):
                raise UsageError(f"--mode={value}: expected P (performance) or C (correctness)")
            explicit[key] = value
            trailing[key] = value
        else:
            raise UsageError(f"unknown option {a!r} (see --help)")
    if not problems:  # the embedded default set, with the settings given
        for d in DEFAULT[1:]:
            problems.append(["matmul", d, kinds["matmul"].parse(d), dict(explicit)])
    else:  # settings after the last problem: for every problem that lacks them
        for p in problems:
            for k, v in trailing.items():
                if k in COMMON_SETTINGS or k in kinds[p[0]].settings:
                    p[3].setdefault(k, v)
    out = []
    for kind_name, desc, parsed, given in problems:
        settings = dict(COMMON_SETTINGS, **kinds[kind_name].settings)
        settings.update(given)
        settings["mode"] = settings["mode"].upper()
        out.append((kind_name, desc, parsed, settings, given))
    try:
        float(opts["min-time"])
        if opts["threads"] is not None and int(opts["threads"]) < 1:
            raise ValueError
    except ValueError:
        raise UsageError(f"--threads / --min-time: got {opts['threads']!r} / "
                         f"{opts['min-time']!r}; expected a positive integer / seconds") from None
    if opts["clock"] not in ("wall", "cpu"):
        raise UsageError(f"--clock: got {opts['clock']!r}; expected wall or cpu")
    if opts["clock"] == "cpu" and opts["threads"] != "1":
        raise UsageError(f"--clock=cpu: the calling thread's CPU time measures one thread; "
                         f"got --threads={opts['threads']}; expected --threads=1")
    return out, opts


def repro(kind, desc, given):
    """The command-line form of one problem: kind, non-default settings, descriptor."""
    return " ".join([f"--{kind}"] + [f"--{k}={v}" for k, v in given.items()] + [desc])


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


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    kinds = load_kinds()
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
        defaults = " ".join(f"--{s}={v}" for s, v in k.settings.items())
        print(f"--{name} default problem configuration: {k.summary}\n    = {defaults}")
    print(f"timing ({opts['clock']} clock): fastest batch of 3 interleaved rounds (dnnq, peers) "
          "of 5 batches each; dnnq "
          "through execute(), oneDNN with its argument array built once (execute + stream "
          "wait); ratio = dnnq time / peer time")
    labels = [repro(kind, desc, given) for kind, desc, _, _, given in problems]
    width = max(len(s) for s in labels)
    print(f"{'problem':{width}s}  {'kernel':26s} {'dnnq us':>9s} {'GOPS':>7s}" +
          "".join(f" {peer + ' us':>13s} {'ratio':>6s}" for peer in PEERS) + "  notes")
    rows, failures = [], 0
    ratios = {p: [] for p in PEERS}
    no_reference = 0
    progress = Progress(len(problems))
    min_time = float(opts["min-time"])
    from dnnq.bench import timing
    timing.set_clock(opts["clock"])
    for i, ((kind, desc, parsed, settings, given), label) in enumerate(zip(problems, labels)):
        progress.show(i, label)
        k = kinds[kind]
        row = {"problem": label, "kind": kind, "descriptor": desc, "mode": settings["mode"],
               "title": title}
        try:
            case = k.create(parsed, settings, env)
        except dnnq.DnnqError as exc:
            progress.clear()
            print(f"{label:{width}s}  {type(exc).__name__}: {exc}", flush=True)
            failures += 1
            rows.append(dict(row, status=f"{type(exc).__name__}: {exc}"))
            continue
        row.update(kernel=case.kernel, ops=case.ops)
        try:
            if settings["mode"] == "C":
                try:
                    equal, total, note = k.check(case)
                    ok = equal == total
                    failures += not ok
                    how = ("as oneDNN's (an f32 layer's bound)" if note.startswith("f32 layer")
                           else "bit-identical to oneDNN")
                    text = (f"{'PASSED' if ok else 'FAILED'}: {equal} of {total} elements "
                            f"{how}" + (f" ({note})" if note else ""))
                    row["status"] = "PASSED" if ok else "FAILED"
                except Unchecked as exc:
                    no_reference += 1
                    text = f"UNCHECKED: {exc}"
                    row["status"] = "UNCHECKED"
                progress.clear()
                print(f"{label:{width}s}  {case.kernel:26s} {text}", flush=True)
                rows.append(row)
                continue
            times = k.run(case, min_time)
            t = times["dnnq"]
            row.update(dnnq_us=t * 1e6, gops=case.ops / t / 1e9)
            line = f"{label:{width}s}  {case.kernel:26s} {t * 1e6:9.1f} {case.ops / t / 1e9:7.0f}"
            for peer in PEERS:
                tp = times.get(peer, "")
                if tp == "":  # no such peer for this kind
                    line += f" {'-':>13s} {'-':>6s}"
                elif isinstance(tp, str):
                    line += f" {tp[:13]:>13s} {'-':>6s}"
                    row[f"{peer}_note"] = tp
                else:
                    ratios[peer].append(t / tp)
                    row.update({f"{peer}_us": tp * 1e6, f"{peer}_ratio": t / tp})
                    line += f" {tp * 1e6:13.1f} {t / tp:6.2f}"
            notes = list(case.notes)
            if case.reference is not None and not isinstance(case.reference, str):
                try:
                    equal, total, note = k.check(case)
                    if equal != total:
                        failures += 1
                        notes.append(f"RESULTS DIFFER ({total - equal} of {total})")
                        row["status"] = "DIFFER"
                    else:
                        row["status"] = "same"
                except Unchecked as exc:
                    notes.append(str(exc))
            progress.clear()
            print(line + "  " + ", ".join(notes), flush=True)
            row["notes"] = "; ".join(notes)
            rows.append(row)
        finally:
            if case.close is not None:
                case.close()
    progress.clear()
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
