"""The driver's command line: the run options, the parser and ``--help``, all read from the
same tables (:data:`RUN_OPTIONS`, :data:`FLAGS` here; the kinds, their settings and built-in
sets in :mod:`dnnq.bench.registry`), so that the help lists exactly what the parser takes."""
import re
import shlex
import textwrap

from dnnq.bench.registry import COMMON, Setting, choice, expand_set

#: the problems run when the command line names none (the BERT-base matmuls)
DEFAULT_KIND, DEFAULT_SET = "matmul", "bert_base"

_ONEDNN_ISAS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX",
                "AVX512_CORE_AMX_FP16")


def _positive(kind, what):
    def check(value):
        try:
            ok = kind(value) > 0
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"got {value!r}; expected {what}")
    return check


#: options that apply to the whole run, anywhere on the line (name -> Setting)
RUN_OPTIONS = {
    "threads": Setting(None, "N", "threads for dnnq and its peers (default: OMP_NUM_THREADS, "
                       "else every core)", _positive(int, "a positive integer")),
    "min-time": Setting("0.3", "SECONDS", "timing budget per implementation and problem",
                        _positive(float, "a positive number of seconds")),
    "clock": Setting("wall", "wall|cpu", "wall: elapsed time; cpu: the calling thread's CPU "
                     "time, with --threads=1 only (time spent descheduled on a loaded machine "
                     "is not counted; cache sharing still is)", choice("wall", "cpu", case=True)),
    "peer-isa": Setting("same", "same|ALL|ONEDNN_ISA", "oneDNN's ISA cap: same as dnnq's level, "
                        "ALL (none) or a ONEDNN_MAX_CPU_ISA name (AVX2, AVX512_CORE_VNNI, ...)",
                        choice("same", "ALL", *_ONEDNN_ISAS)),
    "csv": Setting(None, "FILE", "also write the results as CSV"),
    "plot": Setting(None, "FILE", "bar chart of GOPS per problem and implementation (needs "
                    "matplotlib)"),
    "batch": Setting(None, "FILE", "read options and problems from FILE (# starts a comment), "
                     "as if written here"),
}
#: options without a value
FLAGS = {
    "no-peers": Setting(False, None, "time dnnq alone"),
    "reset": Setting(False, None, "every setting back to its default for the problems after it"),
    "help": Setting(False, None, "this text"),
}
#: benchdnn drivers dnnq has no kind for (yet): named in the error message
BENCHDNN_DRIVERS = ("pool", "reorder", "eltwise", "binary", "sum", "concat", "softmax", "lnorm",
                    "bnorm", "shuffle", "resampling", "prelu", "brgemm", "zeropad")


class UsageError(Exception):
    pass


def expand_batches(argv):
    """``--batch=FILE`` replaced by the options and problems of FILE (recursively)."""
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
                    out.extend(expand_batches(shlex.split(line)))
        else:
            out.append(a)
    return out


def _check(spec, key, value, where=""):
    if spec is not None and spec.check is not None:
        try:
            spec.check(value)
        except Exception as exc:  # ValueError, DnnqError: the message names what is wrong
            msg = str(exc)
            if not msg.startswith(f"--{key}"):
                msg = f"--{key}={value}: {msg}"
            raise UsageError(msg + where) from None


def _appliers(kinds, key):
    return ", ".join("--" + k for k, v in kinds.items() if key in v.settings)


def _parse_descriptor(kinds, kind, token):
    """The problems ``token`` stands for: a built-in set of ``kind`` or one descriptor."""
    k = kinds[kind]
    try:
        descs = expand_set(kind, token)
    except ValueError as exc:
        raise UsageError(f"--{kind} {token}: {exc}") from None
    out = []
    for desc in descs or [token]:
        try:
            out.append((desc, k.parse(desc)))
        except Exception as exc:  # ValueError, DnnqError: a usage error, nothing has run
            msg = str(exc)
            if desc not in msg:
                msg = f"descriptor {desc!r}: {msg}"
            msg = f"--{kind} {msg}"
            name = token.partition(":")[0]
            if descs is None and re.fullmatch(r"[A-Za-z_]\w*", name):
                owner = [o for o, v in kinds.items() if name in v.sets]
                if owner:
                    msg += f"; {name} is a built-in set of --{owner[0]}, not of --{kind}"
                else:
                    msg += (f"; nor is {name!r} a built-in set of --{kind} "
                            f"({', '.join(k.sets) or 'it has none'})")
            raise UsageError(msg) from None
    return out


def parse_args(argv, kinds):
    """Command line -> (problems, run options).  A problem is (kind, descriptor, parsed,
    settings, explicit) with ``settings`` every setting of its kind and ``explicit`` the
    ones the command line gave.  Raises UsageError, before anything runs."""
    argv = expand_batches(argv)
    opts = {n: s.default for n, s in RUN_OPTIONS.items()}
    opts.update({n: False for n in FLAGS})
    kind = None       # the kind the next descriptors are of
    pending = None    # a kind given with no descriptor after it (yet)
    explicit = {}     # settings given so far (since the last --reset)
    trailing = {}     # settings given after the last problem
    problems = []
    known_settings = set(COMMON).union(*(k.settings for k in kinds.values()))

    def no_descriptor(name):
        k = kinds[name]
        sets = f" or a built-in set ({', '.join(k.sets)})" if k.sets else ""
        return UsageError(f"--{name} is followed by no problem; expected a descriptor "
                          f"{k.syntax or ''} (e.g. {k.example or '...'}){sets}")

    def add_problems(token):
        nonlocal pending
        for desc, parsed in _parse_descriptor(kinds, kind, token):
            given = {s: v for s, v in explicit.items()
                     if s in COMMON or s in kinds[kind].settings}
            problems.append([kind, desc, parsed, given])
        pending = None
        trailing.clear()

    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "-h":
            opts["help"] = True
            continue
        if not a.startswith("--"):
            if a.startswith("-"):
                raise UsageError(f"unknown option {a!r} (see --help)")
            if kind is None:
                raise UsageError(f"problem {a!r} before any problem kind; expected the kind "
                                 f"first ({', '.join('--' + k for k in kinds)})")
            add_problems(a)
            continue
        key, eq, value = a[2:].partition("=")
        if key in kinds:
            if pending:
                raise no_descriptor(pending)
            kind = pending = key
            if eq:
                add_problems(value)
        elif key in BENCHDNN_DRIVERS:
            raise UsageError(f"--{key}: dnnq has no {key} driver (available: "
                             f"{', '.join('--' + k for k in kinds)})")
        elif key in FLAGS:
            if eq:
                raise UsageError(f"--{key} takes no value")
            opts[key] = True
            if key == "reset":
                explicit.clear()
                trailing.clear()
        elif key in known_settings or key in RUN_OPTIONS:
            if not eq:
                if i >= len(argv):
                    raise UsageError(f"--{key} needs a value: --{key}=VALUE")
                value = argv[i]
                i += 1
            if key in RUN_OPTIONS:
                _check(RUN_OPTIONS[key], key, value)
                opts[key] = value
                continue
            if key not in COMMON:
                if kind is None:
                    raise UsageError(f"--{key}={value} before any problem kind; expected the "
                                     f"kind first (--{key} applies to {_appliers(kinds, key)})")
                if key not in kinds[kind].settings:
                    raise UsageError(f"--{key} does not apply to --{kind} problems (it applies "
                                     f"to {_appliers(kinds, key)})")
            _check(kinds[kind].setting(key) if kind else COMMON[key], key, value)
            explicit[key] = value
            trailing[key] = value
        else:
            raise UsageError(f"unknown option {a!r} (see --help)")
    if opts["help"]:
        return [], opts
    if pending:
        raise no_descriptor(pending)
    if not problems:  # the default set, with the settings given
        kind = DEFAULT_KIND
        add_problems(DEFAULT_SET)
    else:  # settings after the last problem: for every problem that lacks them
        for p in problems:
            for key, value in trailing.items():
                k = kinds[p[0]]
                if key in COMMON or key in k.settings:
                    if key not in p[3]:
                        _check(k.setting(key), key, value, f" (for --{p[0]} {p[1]})")
                    p[3].setdefault(key, value)
    out = []
    for kind_name, desc, parsed, given in problems:
        settings = kinds[kind_name].defaults
        settings.update(given)
        settings["mode"] = settings["mode"].upper()
        out.append((kind_name, desc, parsed, settings, given))
    if opts["clock"] == "cpu" and opts["threads"] != "1":
        raise UsageError(f"--clock=cpu: the calling thread's CPU time measures one thread; "
                         f"got --threads={opts['threads']}; expected --threads=1")
    return out, opts


def accepted_options(kinds):
    """Every ``--NAME`` the parser takes (kinds, settings, run options, flags)."""
    return set(kinds) | set(COMMON) | set().union(*(k.settings for k in kinds.values())) | \
        set(RUN_OPTIONS) | set(FLAGS)


def repro(kind, desc, given):
    """The command-line form of one problem: kind, non-default settings, descriptor."""
    return " ".join([f"--{kind}"] + [f"--{k}={v}" for k, v in given.items()] + [desc])


# ---- --help ------------------------------------------------------------------------------------

_INTRO = """\
usage: dnnq-bench [--KIND [--SETTING=VALUE ...] PROBLEM ...] ... [RUN OPTIONS]

A benchdnn-style driver for dnnq's int8 primitives: --mode=P times dnnq against oneDNN 3.2
and PyTorch (where installed) on the same problem, --mode=C checks dnnq's results bit for bit
against oneDNN's.  With no problem it times the {default_kind} set {default_set}.

    dnnq-bench --matmul 128x768:768x3072 1x768:768x768
    dnnq-bench --conv --attr-scales=src:common:0.25+wei:per_oc+dst:common:2 \\
        --attr-zero-points=src:common:135+dst:common:1 --attr-post-ops=sum:1.5:2+relu \\
        mb1ic64ih56oc64oh56kh3ph1 --mode=C
    dnnq-bench --conv mobilenet_dw:mb8 --threads=1 --csv=dw.csv
    dnnq-bench --rnn --alg=VANILLA_GRU --direction=concat l2t5mb3sic64
    dnnq-bench --ip mb128ic768oc3072 --mode=C

Order, as in benchdnn: a kind (--matmul, --conv, ...) says how the problems after it are
read; each needs at least one problem: a descriptor, or the name of a built-in set (NAME:mbN:
the set at batch N).  A setting applies to every problem after it until changed or --reset;
settings given after the last problem apply to every problem that did not get them before
(so `--ip mb128ic768oc3072 --mode=C` checks that problem).  An unknown option, kind or set, a
setting the current kind does not take, a value a setting does not take and a malformed
descriptor are usage errors (exit 2), found before anything runs."""

_OUTRO = """\
Output: one table after the runs (a progress bar on stderr when it is a terminal): per problem
dnnq's kernel, time and GOPS and each peer's time and the ratio dnnq / peer, or why the peer
has no time (not installed, refused by oneDNN, n/a for that configuration, --no-peers);
--mode=C: per problem PASSED / FAILED with the count of bit-identical elements, or
UNCHECKED and why.

Timing: dnnq through its public execute(); oneDNN as a C++ caller runs it (argument array
built once, only dnnl_primitive_execute + dnnl_stream_wait timed); both in this process, same
threads, oneDNN capped at dnnq's ISA level; the fastest batch of interleaved rounds, with a
20 ms pause before each implementation's batches (other runtimes' OpenMP threads spin for a
while after their work and would take the cores from the next one).

Threads: run as a program with OMP_PROC_BIND unset, the driver starts again with OpenMP's
threads bound one per core (OMP_PROC_BIND=true, OMP_PLACES=cores) for dnnq and its peers
alike; OMP_PROC_BIND=false keeps them unbound.

Exit status: 0 success; 1 a check failed, results differ or a problem raised; 2 usage error.
New kinds and settings plug in through dnnq.bench.registry (docs/bench.md)."""


def _wrap(text, indent, width=94):
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def _entry(lines, head, body, where):
    """``  --name=VALUES   where`` then the help text, indented."""
    where = f"[{where}]" if where else ""
    if len(head) + len(where) + 5 <= 94:
        lines.append(f"  {head}" + (f"   {where}" if where else ""))
    else:
        lines += [f"  {head}", f"      {where}"]  # (not wrapped: one line per entry)
    if body:
        lines.append(_wrap(body, "      "))


def help_text(kinds):
    """The --help text, from the kinds, settings and options the parser takes."""
    lines = [_INTRO.format(default_kind="--" + DEFAULT_KIND, default_set=DEFAULT_SET), "",
             "Problem kinds (PROBLEM: a descriptor or a built-in set of the kind):"]
    for name, k in kinds.items():
        lines.append(f"  --{name} PROBLEM ...")
        lines.append(_wrap(f"descriptor: {k.syntax or '(see dnnq.bench.' + name + ')'}",
                           "      "))
        if k.example:
            lines.append(_wrap(f"e.g. {k.example}", "      "))
        for s in k.sets.values():
            batch = f" ({s.name}:mbN: at batch N)" if s.batched else ""
            lines.append(_wrap(f"set {s.name}: {s.help or str(len(s.descriptors)) + ' problems'}"
                               f"{batch}", "      "))
        own = [s for s in k.settings]
        lines.append(_wrap("settings: " + " ".join("--" + s for s in ["mode"] + own), "      "))
        if k.summary:
            lines.append(_wrap(f"default: {k.summary}", "      "))
    lines += ["", "Settings (per problem; [the kinds that take it: their default]):"]
    _entry(lines, f"--mode={COMMON['mode'].values}", COMMON["mode"].help,
           f"every kind: {COMMON['mode'].default}")
    # one entry per setting name and way of taking it (values + help), with its kinds
    groups = {}
    for name, k in kinds.items():
        for sname, s in k.settings.items():
            groups.setdefault((sname, s.values, s.help), []).append((name, s.default))
    for (sname, values, text), where in sorted(groups.items(), key=lambda g: _order(g[0][0])):
        by_default = {}
        for kname, default in where:
            by_default.setdefault(default, []).append("--" + kname)
        kinds_text = "; ".join(f"{' '.join(ks)}: {d if d else repr('')}"
                               for d, ks in by_default.items())
        head = f"--{sname}" + (f"={values}" if values else "")
        _entry(lines, head, text or "(no description)", kinds_text)
    lines += ["", "Run options (anywhere on the line, for the whole run):"]
    for name, s in RUN_OPTIONS.items():
        _entry(lines, f"--{name}={s.values}", s.help,
               f"default {s.default}" if s.default is not None else "")
    for name, s in FLAGS.items():
        _entry(lines, f"--{name}" + (", -h" if name == "help" else ""), s.help, "")
    return "\n".join(lines + ["", _OUTRO])


_SETTING_ORDER = ("dt", "bia-dt", "tag", "cfg", "alg", "direction", "activation", "scaling",
                  "attr-scales", "attr-zero-points", "attr-post-ops")


def _order(name):
    return (_SETTING_ORDER.index(name), name) if name in _SETTING_ORDER else (len(_SETTING_ORDER),
                                                                              name)
