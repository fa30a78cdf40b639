"""Long fuzz run of dnnq's public API: the cases of tests/test_fuzz.py, many more of them, random
from a seed, and without stopping at the first failure.

    python -P tools/fuzz_soak.py --examples 200000 --seed 1 [--family matmul ...]

Prints, per family, the cases drawn and their outcomes (ok / InvalidArguments / Unimplemented /
MemoryError / violation / crash / hang), then every failure with its reproducer
(``python -P tests/_fuzz_runner.py CASE``).  Exit status 1 when any case failed.  Needs the
test dependencies (hypothesis) and an installed dnnq; run from the checkout root.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=20000, help="cases in all (default 20000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", action="append", help="only these families (repeatable)")
    ap.add_argument("--messages", type=int, default=0, metavar="K",
                    help="also print the K most frequent refusal messages per family")
    ap.add_argument("--max-failures", type=int, default=20, help="reproducers printed")
    opts = ap.parse_args(argv)

    from hypothesis import HealthCheck, Phase, given, seed, settings
    import _fuzz_runner
    from _fuzz_strategies import FAMILIES

    families = opts.family or sorted(FAMILIES)
    per = max(1, opts.examples // len(families))
    guard = _fuzz_runner.CrashGuard()
    failures = []
    t0 = time.monotonic()
    try:
        for fam in families:
            t1 = time.monotonic()

            @seed(opts.seed)
            @settings(max_examples=per, database=None, deadline=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))
            @given(FAMILIES[fam])
            def soak(case):
                status, detail = guard.run(case)
                if status not in ("ok", "raised"):
                    failures.append((status, detail, case))

            soak()
            counts = {k[1]: v for k, v in guard.stats.items() if k[0] == fam}
            print(f"{fam:14s} {sum(counts.values()):8d} cases  {time.monotonic() - t1:7.1f} s  "
                  + "  ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
            top = sorted(((v, m) for (f, m), v in guard.messages.items() if f == fam),
                         reverse=True)[:opts.messages]
            for v, m in top:
                print(f"    {v:6d}  {m}")
    finally:
        guard.close()
    total = sum(guard.stats.values())
    bad = {}
    for status, _, _ in failures:
        bad[status] = bad.get(status, 0) + 1
    print(f"\n{total} cases drawn in {time.monotonic() - t0:.0f} s (seed {opts.seed}); "
          f"failures: {len(failures)} {bad or ''}; worker restarts: {guard.restarts}")
    for status, detail, case in failures[:opts.max_failures]:
        print(f"\n--- {status}: {detail[:3000]}\n  python -P tests/_fuzz_runner.py "
              f"{repr(repr(case))}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
