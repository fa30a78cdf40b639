"""``dnnq.onnx.InferenceSession``: ONNX Runtime's session interface on dnnq's primitives."""
import threading
import time

import numpy as np

import dnnq
from dnnq.errors import InvalidArguments
from dnnq.onnx.graph import Graph, load_model, model_rounding
from dnnq.onnx.buffers import REUSE, BufferPool, plan_slots
from dnnq.onnx.busy_cores import BusyCoreGuard
from dnnq.onnx.planner import Planner
from dnnq.onnx.qoperator import rewrite_qoperators
from dnnq.onnx.replay import Replay, snapshot
from dnnq.primitives import _verbose

_NP_OF_ELEM = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_}


#: what a parallel step must save over one thread besides 20 %: about the cost of waking
#: the other OpenMP threads after single-threaded steps
_WAKE_S = 25e-6
#: a step this long on one thread keeps all the threads unless they made it much slower:
#: its kernels split it well, and a trial on a core another process held for a moment made
#: it look no faster (ddddocr at two threads kept 1 of its 12 parallel steps: 5.5 instead of
#: 2.8 ms a run); a core that stays busy makes parallel regions many times slower, which
#: the 1.5x still catches
_LARGE_S = 150e-6


#: runs after a doubtful choice (parallel_doubtful) before the next one: three retries
_RECHECK_RUNS = (8, 32, 128)


def parallel_doubtful(one, many):
    """Whether a step timed ``one`` seconds on one thread and ``many`` on all of them is a
    large step (whose kernels split it well) that all the threads made much slower
    (parallel_pays refused it)."""
    return one >= _LARGE_S and many >= 1.5 * one


def choice_doubtful(ones, manys):
    """Whether a choice's trials tell of a core another process held while they ran: the
    large steps all the threads made much slower (parallel_doubtful) are a quarter or more
    of the large steps' one-thread time. (One such step alone is no sign: PP-OCRv4 det has a
    0.7 ms 1x1 convolution that two threads make slower on a quiet machine.)"""
    large = [(one, many) for one, many in zip(ones, manys) if one >= _LARGE_S]
    refused = sum(one for one, many in large if parallel_doubtful(one, many))
    return bool(large) and refused >= 0.25 * sum(one for one, _ in large)


def _read_only(v):
    """A constant as a read-only view (no step may write one; read-only parameter arrays are
    recognised by identity from run to run, e.g. ViewFoldStep's)."""
    if isinstance(v, np.ndarray) and v.flags.writeable:
        v = v.view()
        v.flags.writeable = False
    return v


def parallel_pays(one, many):
    """Whether a step timed ``one`` seconds on one thread and ``many`` on all of them keeps
    all the threads (the rule of InferenceSession's per-step choice)."""
    return (many < 0.8 * one and one - many > _WAKE_S) or \
        (one >= _LARGE_S and many < 1.5 * one)


class InferenceSession:
    """Run an ONNX model on dnnq.

    ``model``: a path, bytes or an ``onnx.ModelProto``. ``threads``: the OpenMP threads of
    dnnq's primitives during ``run`` (None: dnnq's current setting). ``sess_options`` and
    ``providers`` are accepted and ignored, so that code written for
    ``onnxruntime.InferenceSession`` switches with one line.

    At creation the model is read and checked, constants folded, the quantized patterns fused
    into dnnq primitives and (for inputs of static shape) every primitive created and its
    weights packed. A model with symbolic input dims creates the primitives of a shape at the
    first ``run`` with that shape. ``plan()`` lists what runs.

    ``profile=True`` times every step of every ``run`` (wall clock, ``time.perf_counter``):
    ``plan()`` then gives each row's ``time_ms`` (mean over the runs since creation or
    ``reset_profile()``) and ``runs``, as ONNX Runtime's profiler and OpenVINO's performance
    counters do. The timing adds about a microsecond per step.

    With more than one thread, the second run of each input shape (at creation, for static
    shapes) chooses each step's threads: it times every step on one thread and on all of
    them, and runs the whole model with each step on the faster of the two, with every step
    on all the threads and with every step on one thread; the fastest of these whole runs
    is kept (a layer of a few microseconds gains nothing from a second thread, a parallel
    region waits for its slowest thread when the machine is busy, and a layer on several
    threads reading what one thread wrote pulls it from another core's cache). A choice
    timed while another process held a core (large steps much slower on all the threads)
    is made again a few runs later; while the chosen plan runs clearly slower than one
    thread (another program busy on a core), runs go on one thread and the plan is tried
    again now and then (busy_cores.py). ``plan()`` gives each row's ``threads``. Results do
    not depend on the thread count.

    ``rounding`` says where a quantized model rounds. ``"every"`` rounds at every
    ``QuantizeLinear`` of the model, and where ONNX Runtime replaces a quantized group by an
    int8 kernel of its own (QLinearConv, QLinearMatMul, QLinearAdd, QLinearMul,
    QLinearSoftmax, QLinearAveragePool) computes that kernel's arithmetic: a QDQ model gives
    ONNX Runtime's output bytes wherever ONNX Runtime runs it in int8 (its f32 recurrent ops
    aside). ``"chain"`` skips the ``QuantizeLinear -> DequantizeLinear`` pairs inside a chain
    of element-wise ops after a layer (the chain runs in f32 inside the layer and is rounded
    once, at its end: fewer passes over the data, often closer to the f32 model, not always).
    ``None`` (default): what the model's metadata property ``dnnq.rounding`` says (
    ``dnnq.onnx.quantize`` writes ``"chain"``), else ``"every"``. docs/onnx.md, "Accuracy
    and speed".
    """

    def __init__(self, model, sess_options=None, providers=None, *, threads=None,
                 profile=False, rounding=None):
        if not isinstance(profile, bool):
            raise InvalidArguments(f"profile: got {profile!r}; expected True or False")
        if rounding not in (None, "chain", "every"):
            raise InvalidArguments(f"rounding: got {rounding!r}; expected None, 'chain' or "
                                   "'every'")
        if threads is not None:
            if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or \
                    not 1 <= threads <= dnnq.MAX_NUM_THREADS:
                raise InvalidArguments(f"threads: got {threads!r}; expected None or an int in "
                                       f"[1, {dnnq.MAX_NUM_THREADS}]")
            threads = int(threads)
        self._threads = threads
        self._profile = profile
        self._model = load_model(model)
        try:
            rewrite_qoperators(self._model)
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            if isinstance(exc, InvalidArguments):
                raise
            raise InvalidArguments(f"model: a QOperator node with missing or malformed inputs "
                                   f"({type(exc).__name__}: {exc})") from None
        self._graph = Graph(self._model)
        if rounding is None:
            rounding = model_rounding(self._model)
        self.rounding = rounding
        planner = Planner(self._graph, round_every_quantize=rounding == "every")
        self._steps = planner.steps
        needed = {x for st in self._steps for x in st.inputs} | \
            {v.name for v in self._graph.outputs}
        self._consts = {k: _read_only(v) for k, v in planner.consts.items() if k in needed}
        self._keep_outputs()
        self._running = threading.Lock()
        self._dtypes = {}
        self._thread_plans = {}  # (input shapes, threads) -> per-step thread counts, or None
        self._recheck = {}  # key -> [runs left before choosing again] (_schedule_recheck)
        self._rechecks = {}  # key -> the choices made again so far
        self._last_threads = None
        # (key, id of the per-step threads) -> Replay, or (a snapshot of the last warm run's
        # values, its per-step threads) to build one from
        self._replays = {}
        self._guards = {}  # key -> BusyCoreGuard of the thread choice, or None
        self._input_info = {v.name: v for v in self._graph.inputs}
        if self._graph.inputs and all(isinstance(d, int) and d >= 0
                                      for v in self._graph.inputs for d in v.shape):
            # static shapes: create every primitive and pack every weight now
            feed = {v.name: np.zeros(v.shape, _NP_OF_ELEM[v.elem_type])
                    for v in self._graph.inputs}
            self.run(None, feed)
            nthreads = self._threads if self._threads is not None else dnnq.get_num_threads()
            if nthreads > 1:  # the per-step thread choice, so that no user run pays for it
                self.run(None, feed)
        self.reset_profile()

    # --- ONNX Runtime's interface --------------------------------------------------------
    def get_inputs(self):
        return list(self._graph.inputs)

    def get_outputs(self):
        return list(self._graph.outputs)

    def get_modelmeta(self):
        """ONNX Runtime's ModelMetadata fields (rapidocr reads its character list from
        ``custom_metadata_map``)."""
        m = self._model
        return ModelMetadata(m.producer_name, m.graph.name, m.domain, m.doc_string,
                             m.model_version, {p.key: p.value for p in m.metadata_props})

    def get_providers(self):
        return ["dnnq"]

    def run(self, output_names, input_feed, run_options=None):
        """Run the model: ``input_feed`` {name: numpy array}; returns the outputs named in
        ``output_names`` (None: all), as C-contiguous numpy arrays."""
        outs = self._output_names(output_names)
        env = self._check_feed(input_feed)
        # the steps that keep their arrays write into the previous run's: only when no other
        # run of this session is under way (threads sharing a session allocate afresh)
        alone = self._running.acquire(blocking=False)
        record = not self._dtypes
        # the first run writes fresh arrays: their sizes plan the shared buffers
        env[REUSE] = alone and not record
        old = None
        if self._threads is not None:
            old = dnnq.get_num_threads()
            dnnq.set_num_threads(self._threads)
        nthreads = dnnq.get_num_threads()
        key = (tuple(np.shape(input_feed[k]) for k in self._input_info), nthreads)
        per_step = self._thread_plans.get(key, 0)
        try:
            if record:  # the first run: note every value's dtype for plan()
                for st in self._steps:
                    st.run(env)
                    for o in st.outputs:
                        if o in env:
                            self._dtypes[o] = np.asarray(env[o]).dtype
                self._thread_plans[key] = None
            elif nthreads > 1 and per_step is None:
                choice, doubtful, one_s = self._choose_threads(env, nthreads)
                self._thread_plans[key] = self._last_threads = choice
                self._schedule_recheck(key, doubtful)
                self._guards[key] = BusyCoreGuard(choice, [1] * len(choice), one_s) \
                    if any(t > 1 for t in choice) else None
                for k in [k for k in self._replays if k[0] == key]:
                    del self._replays[k]
            elif nthreads > 1 and per_step:
                guard = self._guards.get(key)
                plan = per_step if guard is None else guard.next_plan()
                self._last_threads = plan
                t0 = time.perf_counter()
                self._run_warm(env, key, plan, nthreads)
                if guard is not None:
                    guard.record(plan, time.perf_counter() - t0)
                due = self._recheck.get(key)
                if due is not None:
                    due[0] -= 1
                    if due[0] <= 0:  # the next run of this shape chooses again
                        self._thread_plans[key] = None
            else:
                if nthreads > 1:  # a new shape: its primitives are planned in this run
                    self._thread_plans[key] = None
                if self._profile:
                    self._run_profiled(env)
                elif nthreads > 1:
                    for st in self._steps:
                        st.run(env)
                else:
                    self._run_warm(env, key, None, nthreads)
        finally:
            env.pop(REUSE, None)
            if alone:
                self._running.release()
            if dnnq.get_num_threads() != nthreads:
                dnnq.set_num_threads(nthreads)
            if old is not None:
                dnnq.set_num_threads(old)
        if record:
            for k, v in env.items():
                self._dtypes.setdefault(k, np.asarray(v).dtype)
            self._share_buffers(env)
        result = []
        for name in outs:
            v = np.asarray(env[name])
            if any(np.may_share_memory(v, x) for x in input_feed.values()
                   if isinstance(x, np.ndarray)) or \
                    name in self._consts:
                v = v.copy()
            result.append(v if v.flags.c_contiguous else v.copy(order="C"))
        return result

    # --- dnnq's additions ----------------------------------------------------------------
    def _keep_outputs(self):
        """Let the steps that write fresh arrays keep them across runs (Step.keeps_output),
        except where the array can reach the caller: a graph output, or a value that a step
        may pass on as a view (a reshape, a slice, ...) towards one."""
        producer = {o: st for st in self._steps for o in st.outputs}
        reach = {v.name for v in self._graph.outputs}
        todo = list(reach)
        while todo:
            o = todo.pop()
            st = producer.get(o)
            if st is None or st.fresh_output:
                continue
            for x in st.aliased_inputs(o):
                if x not in reach:
                    reach.add(x)
                    todo.append(x)
        for st in self._steps:
            st.outputs_private = not any(o in reach for o in st.outputs)
            if st.fresh_output:
                st.keeps_output = st.outputs_private

    def _share_buffers(self, env):
        """The kept outputs on a pool of buffers shared by liveness (buffers.py), planned
        from the sizes of the first run's outputs; no repeated calls for the steps reading
        a graph input (KeptOutput.memo_ok)."""
        sizes = {}
        for i, st in enumerate(self._steps):
            if st.keeps_output and len(st.outputs) == 1:
                y = env.get(st.outputs[0])
                if isinstance(y, np.ndarray):
                    sizes[i] = y.nbytes
        inputs = set(self._input_info)
        for st in self._steps:
            if any(x in inputs for x in st.inputs):
                st.memo_ok = False
        slot_of, nslots = plan_slots(self._steps, sizes)
        self._pool = BufferPool(nslots)
        for i, s in slot_of.items():
            self._steps[i].pool, self._steps[i].pool_slot = self._pool, s

    def _choose_threads(self, env, nthreads):
        """Each step's threads, whether the choice is doubtful (choice_doubtful) and the
        time of a run with every step on one thread (BusyCoreGuard's reference).  The
        steps are timed on one thread and on ``nthreads`` (the best of three trials each)
        and judged by parallel_pays: all the threads where they save at least 20 % and 25 us
        (waking the other threads after single-threaded steps costs about that), or a large
        step they do not slow much.  That per-step plan, every step on ``nthreads`` and
        every step on one thread are then compared as whole runs (each plan timed in runs
        that follow a run of itself): the fastest is the choice."""
        clock, steps = time.perf_counter, self._steps
        # one whole run on all the threads first: the first parallel regions of a process
        # start OpenMP's workers and wake an idle core, which made the first session's
        # early steps look slower on several threads than on one (rec: 14 of 31 steps
        # chosen parallel, 10.7 instead of 6.3 ms a run)
        dnnq.set_num_threads(nthreads)
        for st in steps:
            st.run(env)
        # then whole runs, one thread and all of them in turn, each step timed in each:
        # a step's trials are a run apart, so one spell of another process on a core (a
        # few ms) spoils one trial, not all three (trials back to back made a disturbed
        # session keep 2 of ddddocr's 12 parallel steps: 4.7 instead of 2.8 ms a run),
        # and each step runs with the caches a run leaves it, as in use
        best = {1: [np.inf] * len(steps), nthreads: [np.inf] * len(steps)}
        whole = {1: np.inf, nthreads: np.inf}
        for t in (1, nthreads) * 3:
            dnnq.set_num_threads(t)
            times = best[t]
            t_run = clock()
            for i, st in enumerate(steps):
                t0 = clock()
                st.run(env)
                times[i] = min(times[i], clock() - t0)
            whole[t] = min(whole[t], clock() - t_run)
        choice = [nthreads if parallel_pays(one, many) else 1
                  for one, many in zip(best[1], best[nthreads])]
        # the per-step choice against all steps on one thread and on all of them, as whole
        # runs: a step's time depends on where its input was made (a layer on two threads
        # reading what one thread wrote pulls half of it from the other core's cache, and
        # the other thread's wake-up comes on top), which timing each step apart misses
        # (every step on two threads: PP-OCR cls 0.54 -> 0.49 ms, ddddocr 2.54 -> 2.35 ms,
        # where the per-step choice kept 0 of 81 and 12 of 47 steps parallel)
        every = [nthreads] * len(steps)
        plans = [(whole[nthreads], every), (whole[1], [1] * len(steps))]
        if 1 < len(set(choice)):
            # the per-step plan and all the threads again, each in runs after a run of
            # itself (as in use: the runs above on all the threads each followed a run on
            # one), twice in turn
            every_s = mixed_s = np.inf
            for _ in range(2):
                every_s = min(every_s, self._time_plan(env, every, nthreads))
                mixed_s = min(mixed_s, self._time_plan(env, choice, nthreads))
            plans = [(every_s, every), plans[1], (mixed_s, choice)]
        return (min(plans, key=lambda p: p[0])[1], choice_doubtful(best[1], best[nthreads]),
                whole[1])

    def _time_plan(self, env, plan, nthreads):
        """The best of two whole runs of the per-step ``plan``, after one untimed run of it."""
        clock = time.perf_counter
        self._run_threads(env, plan, nthreads, timed=False)
        best = np.inf
        for _ in range(2):
            t0 = clock()
            self._run_threads(env, plan, nthreads, timed=False)
            best = min(best, clock() - t0)
        return best

    def _schedule_recheck(self, key, doubtful):
        """After a doubtful choice (another process held a core while it was timed: large
        steps looked much slower on all the threads, choice_doubtful), choose again after a
        few runs, up to three times (8, 32, 128 runs later); a choice made on a quiet machine
        stays: a session started during a moment of other work would otherwise run on one
        thread for good."""
        done = self._rechecks.get(key, 0)
        if doubtful and done < len(_RECHECK_RUNS):
            self._recheck[key] = [_RECHECK_RUNS[done]]
            self._rechecks[key] = done + 1
        else:
            self._recheck.pop(key, None)

    def _run_warm(self, env, key, per_step, nthreads):
        """A run of the steps (each on its threads of ``per_step``, None: as set) through
        the replay of this input shape's warm runs where there is one (replay.py), else as
        usual; two warm runs in a row that handed out the same arrays make the replay."""
        steps = self._steps
        plain = not env.get(REUSE) or _verbose._level or self._profile
        slot = (key, id(per_step))
        got = None if plain else self._replays.get(slot)
        if isinstance(got, Replay):
            if got.per_step is per_step:
                if not got.run(env, steps, dnnq.set_num_threads, dnnq.get_num_threads()):
                    self._replays.pop(slot)  # built again from the next two runs
                return
            got = None
        if per_step:
            self._run_threads(env, per_step, nthreads)
        else:
            for st in steps:
                st.run(env)
        if plain:
            return
        if got is not None and got[1] is per_step:
            self._replays[slot] = Replay.build(steps, env, got[0], per_step,
                                               self._input_info)
        else:
            self._replays[slot] = (snapshot(env), per_step)

    def _run_threads(self, env, per_step, nthreads, timed=True):
        cur = dnnq.get_num_threads()  # (a run before may have left one thread set)
        profile, clock = self._profile and timed, time.perf_counter
        spent = self._spent if profile else None
        for i, (st, t) in enumerate(zip(self._steps, per_step)):
            if t != cur:
                dnnq.set_num_threads(t)
                cur = t
            if profile:
                t0 = clock()
                st.run(env)
                spent[i] += clock() - t0
            else:
                st.run(env)
        if profile:
            self._profiled_runs += 1

    def _run_profiled(self, env):
        clock, spent = time.perf_counter, self._spent
        for i, st in enumerate(self._steps):
            t0 = clock()
            st.run(env)
            spent[i] += clock() - t0
        self._profiled_runs += 1

    def reset_profile(self):
        """Zero the step timings of ``profile=True``."""
        self._spent = [0.0] * len(self._steps)
        self._profiled_runs = 0

    def plan(self):
        """The executed plan: one dict per step with ``primitive`` (a dnnq primitive, or
        ``numpy:<op>`` for an op run in numpy), ``impl_info`` (the kernel of the last shape
        run; None before a dynamic-shape model's first run), ``nodes`` (the ONNX nodes it
        covers), ``inputs`` / ``outputs`` (value names) and ``dtypes_in`` / ``dtypes_out``;
        ``threads`` (the threads it runs on: see the class description); with
        ``profile=True`` also ``time_ms`` (the step's mean wall time per run, None before the
        first profiled run) and ``runs`` (the runs averaged)."""
        rows = []
        n = self._profiled_runs
        per_step = self._last_threads
        for i, st in enumerate(self._steps):
            prof = {"time_ms": self._spent[i] * 1e3 / n if n else None, "runs": n} \
                if self._profile else {}
            prof["threads"] = per_step[i] if per_step else dnnq.get_num_threads() \
                if self._threads is None else self._threads
            rows.append({
                "primitive": st.primitive, "impl_info": st.impl_info, "nodes": list(st.nodes),
                "inputs": list(st.inputs), "outputs": [o for o in st.outputs if o],
                "dtypes_in": [self._dt(x) for x in st.inputs],
                "dtypes_out": [self._dt(o) for o in st.outputs if o], **prof,
            })
        return rows

    def plan_text(self):
        """``plan()`` as aligned text, one line per step."""
        lines = []
        for r in self.plan():
            dts = f"{','.join(r['dtypes_in'])} -> {','.join(r['dtypes_out'])}"
            impl = f" [{r['impl_info']}]" if r["impl_info"] else ""
            ms = f"{r['time_ms']:9.3f} ms  " if r.get("time_ms") is not None else ""
            lines.append(f"{ms}{r['primitive']}{impl}  {dts}  <- {', '.join(r['nodes'])}")
        return "\n".join(lines)

    def _dt(self, name):
        if name in self._consts:
            return _short(self._consts[name].dtype)
        d = self._dtypes.get(name)
        return "?" if d is None else _short(d)

    def _output_names(self, output_names):
        known = [v.name for v in self._graph.outputs]
        if output_names is None:
            return known
        if isinstance(output_names, str) or not all(isinstance(n, str) for n in output_names):
            raise InvalidArguments(f"output_names: got {output_names!r}; expected None or a "
                                   "list of output names")
        for n in output_names:
            if n not in known:
                raise InvalidArguments(f"output_names: {n!r} is not an output of the model; "
                                       f"expected some of {known}")
        return list(output_names)

    def _check_feed(self, feed):
        if not isinstance(feed, dict):
            raise InvalidArguments(f"input_feed: got {type(feed).__name__}; expected a dict "
                                   "{input name: numpy array}")
        for k in feed:
            if k not in self._input_info:
                raise InvalidArguments(f"input_feed: {k!r} is not an input of the model; "
                                       f"expected {sorted(self._input_info)}")
        env = dict(self._consts)
        for name, info in self._input_info.items():
            if name not in feed:
                raise InvalidArguments(f"input {name!r}: missing from input_feed; expected an "
                                       f"array of {info.type} with shape {info.shape}")
            x = feed[name]
            if isinstance(x, np.generic):
                x = np.asarray(x)
            if not isinstance(x, np.ndarray):
                raise InvalidArguments(f"input {name!r}: got {type(x).__name__}; expected a "
                                       f"numpy array of {info.type}")
            want = np.dtype(_NP_OF_ELEM[info.elem_type])
            if x.dtype != want:
                raise InvalidArguments(f"input {name!r}: got dtype {x.dtype}; expected {want} "
                                       f"({info.type})")
            bad = x.ndim != len(info.shape) or any(
                isinstance(d, int) and d >= 0 and d != s for d, s in zip(info.shape, x.shape))
            if bad:
                raise InvalidArguments(f"input {name!r}: got shape {x.shape}; expected "
                                       f"{info.shape}")
            ro = x.view()
            ro.flags.writeable = False  # no step may write into the caller's array
            env[name] = ro
        return env


class ModelMetadata:
    __slots__ = ("producer_name", "graph_name", "domain", "description", "version",
                 "custom_metadata_map")

    def __init__(self, producer_name, graph_name, domain, description, version, custom):
        self.producer_name, self.graph_name, self.domain = producer_name, graph_name, domain
        self.description, self.version, self.custom_metadata_map = description, version, custom


def _short(dt):
    dt = np.dtype(dt)
    return {"float32": "f32", "uint8": "u8", "int8": "s8", "int32": "s32", "int64": "s64",
            "bool": "bool", "float64": "f64"}.get(dt.name, dt.name)
