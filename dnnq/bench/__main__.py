"""python -m dnnq.bench: time dnnq primitives on benchdnn problem descriptors, and where the
peers are installed (the real oneDNN through the test bridge, PyTorch) time them on the same
problem in the same process with the same threads, and print the ratio.

    python -m dnnq.bench                          # the embedded default: BERT-base matmuls
    python -m dnnq.bench --matmul 128x768:768x3072 --matmul 1x768:768x768 --threads 1
    python -m dnnq.bench --batch=FILE             # one descriptor per line (# comments)
"""
import argparse
import os
import sys

from dnnq.bench.matmul import DEFAULT_MATMULS, run_matmul


# dnnq ISA level -> oneDNN's ONEDNN_MAX_CPU_ISA value, so both run the same instructions
_ONEDNN_ISA = {"default": "SSE41", "avx2": "AVX2", "avx2_vnni": "AVX2_VNNI",
               "avx512_core_vnni": "AVX512_CORE_VNNI"}


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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dnnq.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--matmul", action="append", default=[],
                    help="MxK:KxN (benchdnn matmul descriptor), repeatable")
    ap.add_argument("--batch", help="file of descriptors, one per line")
    ap.add_argument("--dt", default="u8:s8:s8", help="src:wei:dst data types (default u8:s8:s8)")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads (default: all)")
    ap.add_argument("--mode", default="P", choices=["P", "C"],
                    help="P: performance (time), C: correctness against oneDNN")
    ap.add_argument("--min-time", type=float, default=0.3, help="seconds per measurement")
    ap.add_argument("--no-peers", action="store_true", help="time dnnq only")
    ap.add_argument("--peer-isa", default="same",
                    help="ONEDNN_MAX_CPU_ISA for the oneDNN peer: 'same' (default: the ISA dnnq "
                         "dispatches to, a like-for-like comparison) or a oneDNN name, e.g. ALL "
                         "(lets oneDNN use AMX where the CPU has it; dnnq has no AMX kernel)")
    opts = ap.parse_args(argv)
    problems = list(opts.matmul)
    if opts.batch:
        with open(opts.batch) as f:
            for line in f:
                line = line.split("#")[0].strip()
                if line:
                    problems.append(line.replace("--matmul", "").strip())
    if not problems:
        problems = DEFAULT_MATMULS
    if opts.threads:
        import dnnq
        dnnq.set_num_threads(opts.threads)
        os.environ["OMP_NUM_THREADS"] = str(opts.threads)
    ref = None if opts.no_peers else _onednn(opts.peer_isa)
    return run_matmul(problems, opts, ref)


if __name__ == "__main__":
    sys.exit(main())
