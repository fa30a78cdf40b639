"""Whether oneDNN 3.2's int8 LSTM dies at the AMX level on this host, and the cap that avoids it.

On Intel CPUs with AMX, oneDNN 3.2 runs its int8 LSTM / GRU through its AMX brgemm kernels
(``brgemm:avx512_core_amx``); for some shapes (an LSTM with a batch of one and 16 or more
channels, e.g. T=2, N=1, C=H=16) a kernel executes ``tilezero`` with no tile configuration
loaded, and the process dies with SIGILL -- nothing a caller can catch.  A probe in a child
process (``python -m dnnq.testing._rnn_amx_probe``, oneDNN capped at AVX512_CORE_AMX) tells
whether this host is affected; the verdict is kept in ``DNNQ_ONEDNN_AMX_RNN_FAULTS`` ("1" /
"0"), which child processes inherit, so a process tree probes once.

* :func:`faults` -- the verdict (False without AMX: nothing to probe).
* :func:`cap_below_faulting_amx` -- for test suites: where the host is affected and no oneDNN
  cap is set, cap oneDNN at AVX512_CORE_VNNI for this process and its children, so every RNN
  comparison still runs (oneDNN's int8 results are the same at both levels).  It must run
  before oneDNN's first primitive: oneDNN fixes its ISA once.
* The bridge's LSTM / GRU (``_rnn``) refuse, with :class:`OnednnError` ``unimplemented``, a
  primitive for which oneDNN chose an AMX kernel on an affected host, instead of crashing.
"""

from __future__ import annotations

import os
import subprocess
import sys

VERDICT_ENV = "DNNQ_ONEDNN_AMX_RNN_FAULTS"
CAP_ENVS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
SAFE_CAP = "AVX512_CORE_VNNI"


def _host_has_amx() -> bool:
    import dnnq
    features = dnnq.cpu_info()
    return bool(features.get("amx_int8") and features.get("os_grants_amx")
                and not features.get("amx_emulated"))


def faults() -> bool:
    """True when oneDNN 3.2's int8 LSTM at the AMX level dies on this host (probed once per
    process tree in a child process; False on a CPU without AMX)."""
    verdict = os.environ.get(VERDICT_ENV)
    if verdict == "probing":  # inside the probe itself
        return False
    if verdict not in ("0", "1"):
        verdict = "1" if _host_has_amx() and _probe_dies() else "0"
        os.environ[VERDICT_ENV] = verdict
    return verdict == "1"


def _probe_dies() -> bool:
    env = dict(os.environ, **{k: "AVX512_CORE_AMX" for k in CAP_ENVS}, OMP_NUM_THREADS="1")
    env[VERDICT_ENV] = "probing"
    r = subprocess.run([sys.executable, "-P", "-m", __name__], env=env, capture_output=True,
                       text=True, timeout=300)
    if r.returncode > 0:  # the probe itself failed: a bug here, not the host's verdict
        raise RuntimeError(f"the oneDNN AMX LSTM probe failed (exit code {r.returncode}): "
                           f"{(r.stdout + r.stderr).strip()[-2000:]}")
    return r.returncode < 0  # killed by a signal (SIGILL)


def cap_below_faulting_amx() -> str | None:
    """Cap oneDNN at AVX512_CORE_VNNI (this process through ``dnnl_set_max_cpu_isa``, child
    processes through ``ONEDNN_MAX_CPU_ISA``) where its AMX LSTM dies on this host and no cap
    is set; returns the cap applied, or None.  Raises RuntimeError when oneDNN has already
    fixed its ISA (call it before the first oneDNN primitive)."""
    if any(k in os.environ for k in CAP_ENVS) or not faults():
        return None
    for k in CAP_ENVS:
        os.environ[k] = SAFE_CAP
    from ._capi import LIB, const
    if LIB is not None:
        status = LIB.dll.dnnl_set_max_cpu_isa(const("dnnl_cpu_isa_" + SAFE_CAP.lower()))
        if status != const("dnnl_success"):
            raise RuntimeError("oneDNN's ISA was already fixed in this process: cap it before "
                               f"the first primitive, or set ONEDNN_MAX_CPU_ISA={SAFE_CAP}")
    return SAFE_CAP


def _main() -> int:
    """The probe: the smallest LSTM known to die (T=2, N=1, C=H=16) at oneDNN's AMX level."""
    import numpy as np
    from dnnq.testing import lstm
    rng = np.random.default_rng(0)
    T, N, C, H = 2, 1, 16, 16
    lstm(rng.integers(0, 256, (T, N, C), dtype=np.uint8), None, None,
         rng.integers(-127, 128, (1, 1, C, 4, H), dtype=np.int8),
         rng.integers(-127, 128, (1, 1, H, 4, H), dtype=np.int8),
         np.zeros((1, 1, 4, H), np.float32), data_scale=64.0, data_shift=128.0,
         wei_scales=np.array([100.0], np.float32), absent_states=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
