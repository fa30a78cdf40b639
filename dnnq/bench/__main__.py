"""python -m dnnq.bench: a benchdnn-style driver.

Knobs apply to the problems that follow them, as in benchdnn:

    python -m dnnq.bench                                   # embedded default: BERT-base matmuls
    python -m dnnq.bench --matmul 128x768:768x3072 1x768:768x768
    python -m dnnq.bench --matmul --dt=s8:s8:f32 --attr-scales=src:common:0.25+wei:per_oc \\
        --attr-zero-points=src:common:3 --attr-post-ops=relu 512x768:768x768
    python -m dnnq.bench --ip mb128ic768oc3072 --mode=C
    python -m dnnq.bench --batch=FILE                      # knobs and descriptors, # comments

Common knobs: --mode=P|C (performance, the default here / correctness against oneDNN),
--threads=N, --min-time=SECONDS, --no-peers, --peer-isa=same|ALL, --reset.
Per problem it prints the kernel, the time, GOPS and, where the peers are installed (the real
oneDNN through tests/onednn_ref, PyTorch), their times in the same process and the ratios.
Drivers not implemented yet (conv, deconv, rnn, pool, ...) are reported and skipped.
"""
import os
import shlex
import sys


DEFAULT = ["--matmul", "1x768:768x768", "1x768:768x3072", "128x768:768x768",
           "128x768:768x3072", "512x768:768x768", "512x768:768x3072", "512x3072:3072x768",
           "32x512:512x2048"]
_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI", "avx512_core_amx": "AVX512_CORE_AMX"}
_DEFAULTS = {"dt": "u8:s8:s8", "attr-scales": "src:common:0.05+wei:per_oc+dst:common:0.5",
             "attr-zero-points": "", "attr-post-ops": "", "bia-dt": "f32", "mode": "P",
             # --rnn knobs (dnnq/bench/rnn.py)
             "alg": "VANILLA_LSTM", "direction": "left2right", "activation": "TANH",
             "cfg": "u8u8u8u8", "scaling": "per_oc"}


def _onednn(peer_isa):
    """The test bridge, when the source tree's tests/ is around and oneDNN is installed.
    oneDNN reads its ISA cap once, when it loads: set it first."""
    import dnnq
    cap = _ONEDNN_ISA[dnnq.get_effective_cpu_isa()] if peer_isa == "same" else peer_isa.upper()
    os.environ["ONEDNN_MAX_CPU_ISA"] = cap
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "tests"), os.path.join(os.getcwd(), "tests")):
        if os.path.isdir(os.path.join(cand, "onednn_ref")):
            sys.path.insert(0, os.path.abspath(cand))
            break
    try:
        import onednn_ref
    except Exception:
        return None
    return onednn_ref if onednn_ref.available() else None


def _expand(argv):
    out = []
    for a in argv:
        if a.startswith("--batch="):
            with open(a.split("=", 1)[1]) as f:
                for line in f:
                    line = line.split("#", 1)[0].strip()
                    if line:
                        out.extend(_expand(shlex.split(line)))
        else:
            out.append(a)
    return out


def main(argv=None):
    argv = _expand(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    knobs = dict(_DEFAULTS)
    opts = {"threads": None, "min-time": 0.3, "no-peers": False, "peer-isa": "same"}
    driver = "matmul"
    problems = []
    argv = list(argv)
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a.startswith("--"):
            key, eq, value = a[2:].partition("=")
            if not eq and (key in knobs or key in ("threads", "min-time", "peer-isa")) \
                    and i < len(argv):
                value = argv[i]  # "--knob value" as well as "--knob=value"
                i += 1
            if key in ("matmul", "ip", "conv", "deconv", "rnn", "pool", "reorder", "eltwise",
                       "binary", "sum", "concat", "softmax", "lnorm", "bnorm"):
                driver = key
                if value:
                    problems.append((driver, value, dict(knobs)))
            elif key == "reset":
                knobs = dict(_DEFAULTS)
            elif key in knobs:
                knobs[key] = value
            elif key in opts:
                opts[key] = True if key == "no-peers" else value
            else:
                print(f"dnnq.bench: unknown option {a!r} (ignored)", file=sys.stderr)
        else:
            problems.append((driver, a, dict(knobs)))
    if not problems:  # the embedded default set, with whatever knobs were given
        problems = [("matmul", d, dict(knobs)) for d in DEFAULT[1:]]
    import dnnq
    if opts["threads"]:
        dnnq.set_num_threads(int(opts["threads"]))
        os.environ["OMP_NUM_THREADS"] = str(opts["threads"])
    ref = None if opts["no-peers"] else _onednn(opts["peer-isa"])
    from dnnq.bench.matmul import run_problems, best_time
    rnn = [(desc, kn) for drv, desc, kn in problems if drv == "rnn"]
    problems = [pr for pr in problems if pr[0] != "rnn"]
    failures = 0
    if rnn:
        from dnnq.bench import rnn as rnn_bench
        failures += rnn_bench.run_problems(rnn, float(opts["min-time"]), ref, best_time,
                                           not opts["no-peers"], opts["threads"] and
                                           int(opts["threads"]))
    if problems:
        failures += run_problems(problems, float(opts["min-time"]), ref, not opts["no-peers"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
