"""The fuzz test's executor and crash guard (tests/test_fuzz.py, tools/fuzz_soak.py).

A *case* is plain data (dicts, lists, tuples, numbers, strings) drawn by the strategies of
``_fuzz_strategies``: it names a public entry point, its constructor arguments (descriptors as
``("md", dims, dt, tag)``, the attribute as ``("attr", spec)``), the execution tensors to make
(seeded, so a case reproduces exactly) and mutations of them.  :func:`run_case` turns a case
into calls and applies the oracle:

(b) the only exceptions allowed are ``dnnq.InvalidArguments``, ``dnnq.Unimplemented`` and
    ``MemoryError``, each with a non-empty message;
(c) every output is fully written: the case runs twice, the destinations pre-filled with two
    different poison patterns, and the results must be the same bits (with a sum post-op or a
    GEMM ``beta``, where the destination is an input, both runs start from the same contents);
    mutations that only change the memory layout of valid inputs (strided / Fortran / reversed
    / unaligned / read-only views) must give the bits of the contiguous run;
(d) where a numpy reference is cheap (Reorder, Eltwise relu, Pooling max, MatMul and GEMM s32
    without attributes), the result must equal it.

(a), "the process does not crash", is :class:`CrashGuard`'s: the cases run in a persistent worker
process fed over a pipe, restarted when it dies; a death or a hang is reported with the case.
``python -P tests/_fuzz_runner.py CASE_REPR`` replays one case in-process (the reproducer the
failure message prints).
"""
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# --------------------------------------------------------------------------------------------
# worker side: cases -> calls
# --------------------------------------------------------------------------------------------

POISON = (0xA5, 0x5A)


class Violation(AssertionError):
    """The oracle failed (not an allowed outcome)."""


def _dnnq():
    import dnnq
    return dnnq


def build_md(spec):
    _, dims, dt, tag = spec
    return _dnnq().MemoryDesc(dims, dt, tag)


def build_attr(spec):
    dnnq = _dnnq()
    attr = dnnq.PrimitiveAttr()
    for arg, mask in spec.get("scales", ()):
        attr.set_scales_mask(arg, mask)
    for arg, mask in spec.get("zps", ()):
        attr.set_zero_points_mask(arg, mask)
    if spec.get("post_ops"):
        ops = dnnq.PostOps()
        for op in spec["post_ops"]:
            kind = op[0]
            if kind == "eltwise":
                ops.append_eltwise(op[1], op[2], op[3])
            elif kind == "binary":
                ops.append_binary(op[1], build(op[2]))
            elif kind == "sum":
                ops.append_sum(op[1], op[2], op[3])
            elif kind == "dw":
                ops.append_dw(*op[1:])
            else:
                raise AssertionError(kind)
        attr.set_post_ops(ops)
    if spec.get("rnn_data") is not None:
        attr.set_rnn_data_qparams(*spec["rnn_data"])
    if spec.get("rnn_wei") is not None:
        mask, scales = spec["rnn_wei"]
        attr.set_rnn_weights_qparams(mask, np.asarray(scales, np.float32)
                                     if isinstance(scales, list) else scales)
    return attr


def build(v):
    """Constructor argument from its data form."""
    if isinstance(v, tuple) and v and v[0] == "md":
        return build_md(v)
    if isinstance(v, tuple) and v and v[0] == "attr":
        return build_attr(v[1])
    if isinstance(v, tuple) and v and v[0] == "np":  # ("np", dtype name, python value)
        return np.asarray(v[2], dtype=v[1])
    if isinstance(v, tuple) and v and v[0] == "npr":  # ("npr", dtype, values, shape)
        return np.asarray(v[2], dtype=v[1]).reshape(v[3])
    if isinstance(v, list):
        return [build(x) for x in v]
    return v


_RANGES = {"u8": (0, 255), "s8": (-128, 127), "s32": (-2 ** 31, 2 ** 31 - 1)}


def fill_values(shape, dt, fill, rng):
    """Values of one tensor: 'rand' (ints over a useful range, f32 normal), 'small', 'edge'
    (the data type's extremes; f32 with NaN / inf / huge / denormal values)."""
    if dt == "f32" and fill == "pos":
        return rng.uniform(0.05, 4.0, shape).astype(np.float32)
    if dt == "f32":
        x = rng.standard_normal(shape).astype(np.float32) * np.float32(4 if fill != "small" else 1)
        if fill == "edge" and x.size:
            specials = np.array([np.nan, np.inf, -np.inf, 3.0e38, -3.0e38, 1e-40, -0.0,
                                 2.0 ** 31, -2.0 ** 31], np.float32)
            idx = rng.integers(0, x.size, max(1, x.size // 3))
            x.reshape(-1)[idx] = rng.choice(specials, idx.size)
        return x
    lo, hi = _RANGES[dt]
    if fill == "pos":
        return rng.integers(1, 9, shape).astype({"u8": np.uint8, "s8": np.int8,
                                                 "s32": np.int32}[dt])
    if fill == "small":
        lo, hi = max(lo, -8), min(hi, 8)
    elif fill == "rand" and dt == "s32":
        lo, hi = -3000, 3000
    x = rng.integers(lo, hi, shape, dtype=np.int64, endpoint=True)
    if fill == "edge" and x.size:
        idx = rng.integers(0, x.size, max(1, x.size // 3))
        x.reshape(-1)[idx] = rng.choice([lo, hi], idx.size)
    return x.astype({"u8": np.uint8, "s8": np.int8, "s32": np.int32}[dt])


def make_tensor(md_spec, fill, seed):
    """The array of a descriptor (its layout: channels-last tags give channels-last strides)."""
    md = build_md(md_spec)
    if md.nelems > 1 << 22:
        # a descriptor too large to materialise: a small stand-in, which must be refused
        return np.zeros((2,) * len(md.dims), md.numpy_dtype)
    out = md.empty()
    out[...] = fill_values(md.dims, md.dt, fill, np.random.default_rng(seed))
    return out


def _stand_in(md_spec):
    """The array of a descriptor dnnq refuses: zeros when numpy can make it (0-sized dims, for
    the functions taking arrays without descriptors), else one f32 zero."""
    _, dims, dt, _ = md_spec
    try:
        if dt in _RANGES or dt == "f32":
            shape = tuple(int(d) for d in dims)
            if all(0 <= d <= 64 for d in shape):
                return np.zeros(shape, {"u8": np.uint8, "s8": np.int8, "s32": np.int32,
                                        "f32": np.float32}[dt])
    except (TypeError, ValueError):
        pass
    return np.zeros(1, np.float32)


def scale_values(count, seed, zp=False):
    rng = np.random.default_rng(seed)
    count = count if count <= 1 << 20 else 1  # of a huge descriptor, which must be refused
    if zp:
        return rng.integers(-4, 5, count).astype(np.int32)
    return rng.uniform(0.05, 4.0, count).astype(np.float32)


def _count(dims, mask):
    try:
        return max(1, int(_dnnq().scale_count(dims, mask)))
    except Exception:  # noqa: BLE001 - a mask the primitive must refuse; any count will do
        return 1


def _layout_variant(arr, how):
    """A view of a copy of ``arr`` with the same logical content and another memory layout."""
    if arr.ndim == 0 or arr.dtype.hasobject:
        return arr
    if how == "stride2":
        big = np.empty(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
        v = big[..., ::2]
    elif how == "fortran":
        v = np.empty(arr.shape, arr.dtype, order="F")
    elif how == "reversed":
        v = np.empty(arr.shape, arr.dtype)[::-1]
    elif how == "unaligned":
        raw = np.empty(arr.nbytes + 1, np.uint8)
        v = raw[1:].view(arr.dtype).reshape(arr.shape)
    elif how == "broadcast0":  # zero strides where a dim is 1 is the only safe broadcast form
        v = np.empty(arr.shape, arr.dtype)
    else:
        raise AssertionError(how)
    v[...] = arr
    return v


LAYOUT_ONLY = ("stride2", "fortran", "reversed", "unaligned", "readonly")


def apply_mutation(args, mut, out_keys):
    """Apply one mutation to the execution arguments (in place)."""
    op = mut[0]
    keys = sorted(args, key=repr)
    if op == "value":
        key = mut[1] if mut[1] in args else None
    else:
        key = keys[mut[1] % len(keys)] if keys else None
    if op == "drop" and key is not None:
        del args[key]
    elif op == "extra":
        args[mut[2]] = np.zeros(mut[3], np.float32) if mut[3] is not None else None
    elif key is None:
        return
    elif op in ("stride2", "fortran", "reversed", "unaligned"):
        if isinstance(args[key], np.ndarray):
            args[key] = _layout_variant(args[key], op)
    elif op == "readonly":
        if isinstance(args[key], np.ndarray) and key not in out_keys:
            a = args[key].copy()
            a.flags.writeable = False
            args[key] = a
    elif op == "readonly_dst":
        if isinstance(args[key], np.ndarray):
            args[key].flags.writeable = False
    elif op == "dtype":
        if isinstance(args[key], np.ndarray):
            with np.errstate(all="ignore"):
                try:
                    args[key] = args[key].astype(mut[2])
                except (OverflowError, ValueError):  # e.g. an object array holding inf
                    pass  # numpy itself cannot make this array: the mutation is skipped
    elif op == "shape":
        a = args[key]
        if not isinstance(a, np.ndarray):
            return
        how = mut[2]
        if how == "add_dim":
            args[key] = a[None]
        elif how == "drop_dim" and a.ndim and a.shape[0]:
            args[key] = a[0]
        elif how == "grow":
            args[key] = np.concatenate([a, a], axis=-1) if a.ndim else a.reshape(1)
        elif how == "shrink" and a.ndim and a.shape[-1] > 1:
            args[key] = a[..., :-1]
        elif how == "flat":
            args[key] = a.reshape(-1)
        elif how == "scalar" and a.size:
            args[key] = a.reshape(-1)[:1].reshape(())
        elif how == "empty":
            args[key] = a.reshape(-1)[:0]
    elif op == "value":  # one element of a scale / zero-point array
        a = args[key]
        if isinstance(a, np.ndarray) and a.size:
            v = mut[2]
            if isinstance(v, int) and not (-2 ** 31 <= v < 2 ** 31) or \
                    (isinstance(v, float) and a.dtype.kind in "iu"):
                a = a.astype(np.int64 if isinstance(v, int) else np.float64)
            a = a.copy()
            with np.errstate(all="ignore"):
                a.reshape(-1)[mut[3] % a.size] = v
            args[key] = a
    elif op == "type":
        a = args[key]
        how = mut[2]
        if how == "list" and isinstance(a, np.ndarray):
            args[key] = a.tolist()
        elif how == "none":
            args[key] = None
        elif how == "str":
            args[key] = "x"
        elif how == "pyscalar" and isinstance(a, np.ndarray) and a.size:
            v = a.reshape(-1)[0]  # a Python object already in an object array
            args[key] = v.item() if isinstance(v, np.generic) else v
        elif how == "object" and isinstance(a, np.ndarray):
            args[key] = a.astype(object)
    else:
        raise AssertionError(mut)


def must_refuse(case, args):
    """Why the final execution arguments must be refused (SPEC sections 4 and 7), or None: a
    data array (one with a descriptor) of another dtype or shape or not an ndarray, a
    read-only destination, a scale that is not finite and > 0 in f32, a zero point that is not
    an integer in s32."""
    from dnnq import args as A
    tensors = {key: md for key, md, _ in case.get("tensors", ())}
    for key in case.get("strict_keys", ()):
        a, md = args.get(key), tensors[key]
        if a is None:
            continue
        if not isinstance(a, np.ndarray):
            return f"{type(a).__name__} given for the data array {key!r}"
        want = np.dtype({"u8": np.uint8, "s8": np.int8, "s32": np.int32,
                         "f32": np.float32}.get(md[2], np.float64))
        if not isinstance(md[1], tuple):
            continue  # not a descriptor: its constructor refuses it
        if a.dtype != want or (a.shape != tuple(md[1]) and key not in case.get(
                "any_shape_keys", ())):
            return f"{a.dtype}{a.shape} given for the data array {key!r} ({md})"
    for key in case.get("outputs", ()):
        a = args.get(key)
        if isinstance(a, np.ndarray) and not a.flags.writeable:
            return f"a read-only destination {key!r}"
    for key, *_ in case.get("quant", ()):
        a = args.get(key)
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "iuf" or not a.size:
            continue
        with np.errstate(all="ignore"):
            if key & A.DNNL_ARG_ATTR_ZERO_POINTS:
                bad = a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.round(a)))
                bad = bad or np.any(a < -2 ** 31) or np.any(a >= 2 ** 31)
            else:
                f = a.astype(np.float32)
                bad = not np.all(np.isfinite(f) & (f > 0))
        if bad:
            return f"{'zero points' if key & A.DNNL_ARG_ATTR_ZERO_POINTS else 'scales'} " \
                   f"{a.reshape(-1)[:4]} in {key!r}"
    return None


def make_args(case, poison, with_refusals=False):
    """The execution dict of a case for one run (fresh arrays; destinations poisoned)."""
    args = {}
    outs = set(case.get("outputs", ()))
    keep = case.get("dst_is_input", False)
    for i, (key, md_spec, fill) in enumerate(case.get("tensors", ())):
        try:
            a = make_tensor(md_spec, fill, case["seed"] + 7919 * i)
        except Exception:  # noqa: BLE001 - an invalid descriptor: the constructor refuses it
            a = _stand_in(md_spec)
        if key in outs and not keep:
            a[...] = np.frombuffer(bytes([POISON[poison]]) * a.itemsize, a.dtype)[0]
        args[key] = a
    dims_of = {key: md_spec[1] for key, md_spec, _ in case.get("tensors", ())}
    dims_of.update(case.get("extra_dims", {}))
    for j, (key, base, mask, zp, *same) in enumerate(case.get("quant", ())):
        j = same[0] if same else j  # entries that must hold equal values share a seed
        args[key] = scale_values(_count(dims_of.get(base, (1,)), mask), case["seed"] + 31 * j, zp)
    for mut in case.get("mutations", ()):
        apply_mutation(args, mut, outs)
    return (args, must_refuse(case, args)) if with_refusals else args


def _snapshot(result, args, case):
    """Bytes of everything the call produced: its return value and the destination arrays."""
    parts = []

    def add(tag, x):
        if isinstance(x, np.ndarray):
            parts.append((tag, x.dtype.str, x.shape, np.ascontiguousarray(x).tobytes()))
        elif isinstance(x, dict):
            for k in sorted(x, key=repr):
                add((tag, k), x[k])
        elif isinstance(x, (tuple, list)):
            for k, v in enumerate(x):
                add((tag, k), v)
        else:
            parts.append((tag, repr(x)))

    add("result", result)
    for k in case.get("outputs", ()):
        if k in args:
            add(("dst", k), args[k])
    return parts


ALLOWED = ("InvalidArguments", "Unimplemented", "MemoryError")


def _call(case, args):
    from _fuzz_calls import CALLS
    return CALLS[case["family"]](case, args)


def _one_run(case, poison, mutations=True):
    c = case if mutations else dict(case, mutations=())
    args, refusals = make_args(c, poison, with_refusals=True)
    result = _call(c, args)
    if refusals:
        raise Violation("accepted what must be refused: " + refusals)
    return _snapshot(result, args, c), result, args


_DEFAULT_THREADS = []


def run_case(case):
    """Run one case; returns ``("ok" | "raised", detail)`` or raises :class:`Violation`."""
    dnnq = _dnnq()
    if not _DEFAULT_THREADS:
        _DEFAULT_THREADS.append(dnnq.get_num_threads())
    if case.get("isa"):
        dnnq.set_max_cpu_isa(case["isa"])
    if case.get("threads"):
        dnnq.set_num_threads(case["threads"])
    try:
        try:
            snap0, result, args = _one_run(case, 0)
        except (dnnq.InvalidArguments, dnnq.Unimplemented, MemoryError) as exc:
            if not str(exc).strip():
                raise Violation(f"{type(exc).__name__} with an empty message") from exc
            return "raised", f"{type(exc).__name__}: {exc}"
        except Violation:
            raise
        except BaseException as exc:  # noqa: BLE001 - the oracle's point
            raise Violation(f"leaked {type(exc).__name__}: {exc}\n"
                            + "".join(traceback.format_exception(exc))) from exc
        try:
            snap1, _, _ = _one_run(case, 1)
        except BaseException as exc:  # noqa: BLE001
            raise Violation("the second run (other poison) raised "
                            f"{type(exc).__name__}: {exc}") from exc
        if snap0 != snap1:
            raise Violation("outputs differ between two runs with differently poisoned "
                            "destinations (unwritten or nondeterministic output): "
                            + _diff(snap0, snap1))
        muts = case.get("mutations", ())
        if muts and all(m[0] in LAYOUT_ONLY for m in muts):
            try:
                snap2, _, _ = _one_run(case, 0, mutations=False)
            except BaseException as exc:  # noqa: BLE001
                raise Violation("a layout-only mutation was accepted but the contiguous run "
                                f"raised {type(exc).__name__}: {exc}") from exc
            if snap0 != snap2:
                raise Violation("a layout-only mutation (strided / reversed / unaligned / "
                                "read-only inputs) changed the result: " + _diff(snap0, snap2))
        if case.get("ref") and all(m[0] in LAYOUT_ONLY for m in muts):
            from _fuzz_calls import REFERENCES
            REFERENCES[case["ref"]](case, make_args(case, 0), result)
        return "ok", ""
    finally:
        if case.get("isa"):
            dnnq.set_max_cpu_isa("all")
        if case.get("threads"):
            dnnq.set_num_threads(_DEFAULT_THREADS[0])


def _diff(a, b):
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} outputs"
    for x, y in zip(a, b):
        if x != y:
            if len(x) == 4 and len(y) == 4 and x[:3] == y[:3]:
                ax = np.frombuffer(x[3], x[1]).reshape(x[2])
                ay = np.frombuffer(y[3], y[1]).reshape(y[2])
                bad = np.argwhere(ax.view(np.uint8).reshape(-1) != ay.view(np.uint8).reshape(-1))
                return (f"{x[0]}: {bad.size} bytes differ of {ax.nbytes}, "
                        f"first values {ax.reshape(-1)[:8]} vs {ay.reshape(-1)[:8]}")
            return f"{x[:3]} vs {y[:3]}"
    return "?"


def serve():
    """Worker loop: length-prefixed pickled cases on stdin, results on stdout."""
    import faulthandler
    faulthandler.enable()
    sys.path.insert(0, HERE)
    _dnnq()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        case = pickle.loads(inp.read(struct.unpack("<Q", head)[0]))
        try:
            res = run_case(case)
        except Violation as exc:
            res = ("violation", str(exc))
        data = pickle.dumps(res)
        out.write(struct.pack("<Q", len(data)) + data)
        out.flush()


# --------------------------------------------------------------------------------------------
# parent side: the crash guard
# --------------------------------------------------------------------------------------------

class CrashGuard:
    """A persistent worker process running cases; restarted after a crash or a hang."""

    def __init__(self, timeout=60.0):
        self.timeout = timeout
        self.proc = None
        self.stats = {}
        self.messages = {}  # (family, start of an allowed exception's message) -> count
        self.restarts = 0

    def _start(self):
        self.err = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "2")
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c",
             f"import sys; sys.path.insert(0, {HERE!r}); import _fuzz_runner; "
             "_fuzz_runner.serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, cwd=HERE, env=env)

    def close(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _read(self, n, deadline):
        buf = b""
        fd = self.proc.stdout.fileno()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _stderr_tail(self):
        self.err.seek(0)
        return self.err.read()[-4000:].decode(errors="replace")

    def run(self, case):
        """``(status, detail)`` with status ok / raised / violation / crash / hang."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        data = pickle.dumps(case)
        try:
            self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
            self.proc.stdin.flush()
            deadline = time.monotonic() + self.timeout
            n = struct.unpack("<Q", self._read(8, deadline))[0]
            res = pickle.loads(self._read(n, deadline))
        except TimeoutError:
            self.proc.kill()
            self.proc.wait()
            res = ("hang", f"no answer in {self.timeout} s\n" + self._stderr_tail())
            self.proc = None
            self.restarts += 1
        except (EOFError, BrokenPipeError):
            code = self.proc.wait()
            res = ("crash", f"worker died (exit status {code})\n" + self._stderr_tail())
            self.proc = None
            self.restarts += 1
        key = (case["family"], res[0] if res[0] != "raised" else res[1].split(":")[0])
        self.stats[key] = self.stats.get(key, 0) + 1
        if res[0] == "raised":
            msg = (case["family"], res[1][:90])
            self.messages[msg] = self.messages.get(msg, 0) + 1
        return res

    def check(self, case):
        """Run a case and raise AssertionError (with the reproducer) unless it passed."""
        status, detail = self.run(case)
        if status in ("ok", "raised"):
            return
        raise AssertionError(
            f"fuzz case {status}: {detail}\n\nreproduce (from the checkout root):\n"
            f"  python -P tests/_fuzz_runner.py {repr(repr(case))}\n\ncase = {case!r}")


def replay(text):
    """Run one case (its repr) in this process: the reproducer of a failure."""
    sys.path.insert(0, HERE)
    case = eval(text, {"__builtins__": {}, "nan": float("nan"), "inf": float("inf")})
    print(run_case(case))


if __name__ == "__main__":
    replay(sys.argv[1])
