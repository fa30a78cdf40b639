"""dnnq.distributed.map_batches on a LocalCluster of 2 worker processes (loopback only):
results equal to one process (a dnnq InnerProduct against numpy integer math; the demo's
int8 encoder against itself run in this process), one model load per worker, a worker
restarted mid-job without a lost row, bad rows as per-row error records, Parquet output, the
argument errors, and ``dnnq-demo --corpus --dask``.

Model loads and batch calls are counted in files the workers append to (one line each)."""
import functools
import os
import re
import subprocess
import sys
import textwrap
import time

import cloudpickle
import numpy as np
import pytest

import dask
import dask.array as da
import dask.bag as db
import dask.dataframe as ddf
import pandas as pd
import pyarrow.parquet as pq
from distributed import Client, LocalCluster

import dnnq
import dnnq.distributed as dqd
from dnnq import DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, MemoryDesc
from dnnq.demo import data
from dnnq.demo._dask import TextEncoder, NO_MALLOC_TRIM
from dnnq.demo.__main__ import main as demo_main
from dnnq.demo.encoder_int8 import Int8Encoder
from dnnq.demo.model import load_weights, Tokenizer

# the workers cannot import this file: its functions travel by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def client():
    with dask.config.set({NO_MALLOC_TRIM: None}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def _lines(path):
    return open(path).read().split() if os.path.exists(path) else []


def _worker_pids(client):
    return set(client.run(os.getpid).values())


# --- a dnnq model with an independent reference -------------------------------------------

class IntLinear:
    """x (m, K) u8 -> x @ w.T (m, N) s32 through a dnnq InnerProduct (one per row count m:
    a primitive's shape is fixed at creation)."""

    def __init__(self, w, calls=None, delay=0.0):
        self.w, self.calls, self.delay = w, calls, delay
        self._prims = {}

    def __call__(self, x):
        m = x.shape[0]
        prim = self._prims.get(m)
        if prim is None:
            n, k = self.w.shape
            prim = self._prims[m] = dnnq.InnerProduct(
                MemoryDesc((m, k), "u8"), MemoryDesc((n, k), "s8"), MemoryDesc((m, n), "s32"))
        if self.calls:
            with open(self.calls, "a") as f:
                f.write(f"{m}\n")
        time.sleep(self.delay)
        return prim.execute({DNNL_ARG_SRC: np.ascontiguousarray(x), DNNL_ARG_WEIGHTS: self.w})


def make_int_linear(w, loads, calls=None, delay=0.0):
    with open(loads, "a") as f:
        f.write(f"{os.getpid()}\n")
    return IntLinear(w, calls, delay)


def _int_data(rows, k=40, n=24, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (rows, k), dtype=np.uint8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return x, w, (x.astype(np.int64) @ w.T.astype(np.int64)).astype(np.int32)


@pytest.mark.parametrize("rows,chunk,batch", [(1, 1, 1), (63, 10, 16), (64, 64, 16),
                                              (301, 37, 32), (300, 300, 7)])
def test_int8_linear_equals_numpy(client, tmp_path, rows, chunk, batch):
    x, w, want = _int_data(rows, seed=rows)
    make = functools.partial(make_int_linear, w, str(tmp_path / "loads"))
    got = dqd.map_batches(make, da.from_array(x, chunks=(chunk, 40)), batch_size=batch,
                          client=client)
    assert isinstance(got, da.Array) and got.shape == (rows, 24) and got.dtype == np.int32
    assert np.array_equal(got.compute(), want)


def test_model_loads_once_per_worker(client, tmp_path):
    x, w, want = _int_data(200)
    loads, calls = str(tmp_path / "loads"), str(tmp_path / "calls")
    make = functools.partial(make_int_linear, w, loads, calls)
    for batch in (10, 16):  # two jobs with the same model: loaded once all the same
        got = dqd.map_batches(make, da.from_array(x, chunks=25), batch_size=batch, client=client)
        assert np.array_equal(got.compute(), want)
    pids = _lines(loads)
    assert sorted(pids) == sorted(set(pids)) and set(pids) == {str(p) for p in _worker_pids(client)}
    # and the batches are the model's calls: 20, then 12 + 1 (plus one each for the probe)
    assert sorted(map(int, _lines(calls))) == sorted([10] * 21 + [16] * 13 + [8])
    assert set(dqd.load_times(make, client=client)) == set(client.nthreads())


# --- the demo's encoder: the same bits as in this process ----------------------------------

@pytest.fixture(scope="module")
def static():
    return Int8Encoder(load_weights(), calibration=Tokenizer()(data.CALIBRATION)).static


def _corpus(n, seed=0):
    rng = np.random.default_rng(seed)
    pool = data.SENTENCES + data.CALIBRATION + data.DOCUMENTS
    return [" ".join(rng.choice(pool, rng.integers(1, 3), replace=False)) for _ in range(n)]


@pytest.fixture(scope="module")
def local(static):
    return TextEncoder(static)          # this process, its own thread count


def test_encoder_equals_single_process(client, static, local):
    texts = _corpus(256)
    make = functools.partial(TextEncoder, static, 1)
    want = np.concatenate([local(texts[i:i + 32]) for i in range(0, len(texts), 32)])
    few = texts[:70]  # the other input kinds on fewer rows (CI time)
    inputs = {"bag": (db.from_sequence(texts, npartitions=7), 256),
              "column": (ddf.from_pandas(pd.DataFrame({"t": few}), npartitions=3)["t"], 70),
              "array": (da.from_array(np.array(few, dtype=object), chunks=30), 70)}
    for kind, (rows, n) in inputs.items():
        got = dqd.map_batches(make, rows, batch_size=32, client=client).compute()
        assert got.shape == (n, 384) and got.dtype == np.float32, kind
        assert np.array_equal(got.view(np.uint32), want[:n].view(np.uint32)), kind


def test_bad_rows_give_error_records(client, static, local, tmp_path):
    texts = _corpus(70, seed=1)
    bad = {3: "", 4: "   \t", 40: " ".join(["word"] * 300), 41: b"caf\xc3 au lait",
           42: "caf\udcc3 au lait", 50: 17}
    rows = [bad.get(i, t) for i, t in enumerate(texts)]
    make = functools.partial(TextEncoder, static, 1)
    values, errors = dqd.map_batches_with_errors(make, db.from_sequence(rows, npartitions=3),
                                                 batch_size=16, client=client)
    values, errors = client.persist([values, errors])   # computed once, read twice
    got, errs = values.compute(), errors.compute()
    assert {i for i, e in enumerate(errs) if e is not None} == set(bad)
    assert errs[3] == errs[4] == "empty text"
    assert errs[40] == "302 tokens; the model takes at most 256"
    assert errs[41] == "not UTF-8 text (byte 0xc3 at offset 3)"
    assert errs[42] == "not UTF-8 text (byte 0xc3 at character 3)"
    assert errs[50] == "expected text (str or UTF-8 bytes); got int"
    assert np.isnan(got[sorted(bad)]).all()
    for lo in range(0, 70, 16):
        good = [i for i in range(lo, min(lo + 16, 70)) if i not in bad]
        assert np.array_equal(got[good], local([texts[i] for i in good]))  # encoded here
    # the same records in Parquet, written by the workers
    dqd.to_parquet(values, str(tmp_path / "out"), errors=errors, column="embedding",
                   client=client)
    table = pq.read_table(str(tmp_path / "out")).sort_by("row")
    assert table.column("row").to_pylist() == list(range(70))
    assert table.column("error").to_pylist() == list(errs)
    emb = table.column("embedding").to_pylist()
    assert all(emb[i] is None for i in bad)
    assert np.array_equal(np.array([emb[i] for i in range(70) if i not in bad], np.float32),
                          np.delete(got, sorted(bad), axis=0))


def test_demo_on_a_running_scheduler(client, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes("\n".join(_corpus(100, seed=2)).encode() + b"\n\nbad \xff line\n")
    assert demo_main(["--corpus", str(corpus), "--dask", client.scheduler.address,
                      "--batch", "16", "--out", str(tmp_path / "emb")]) == 0
    out = capsys.readouterr().out
    assert "102 line(s), batch 16: 100 embedded, 2 rejected by row" in out
    assert "line 101: empty text" in out and "line 102: not UTF-8 text (byte 0xff" in out
    assert "6 batch(es), 96 sentence(s) re-embedded in this process" in out  # not the 7th
    assert "every embedding equals the single-process result bit for bit" in out
    assert pq.read_table(str(tmp_path / "emb")).num_rows == 102


@pytest.mark.parametrize("argv,message", [
    (["--dask", "local:0", "--corpus", "x"], "--dask local:0: expected local:N"),
    (["--dask", "udp://h:1", "--corpus", "x"], "expected local:N (a LocalCluster"),
    (["--dask", "local:2"], "--dask needs --corpus FILE"),
    (["--corpus", "x"], "--corpus and --out go with --dask"),
    (["--dask", "local:1", "--corpus", "/nonexistent/c.txt"], "cannot read it"),
])
def test_demo_dask_errors(capsys, argv, message):
    assert demo_main(argv) == 2
    assert message in capsys.readouterr().err


# --- errors ---------------------------------------------------------------------------------

def test_argument_errors(client):
    x, w, _ = _int_data(10)
    make = functools.partial(IntLinear, w)
    rows = da.from_array(x, chunks=5)
    frame = ddf.from_pandas(pd.DataFrame({"t": ["a", "b"]}), npartitions=1)
    for kwargs, message in [
            (dict(make_model=3, data=rows), "make_model: got int; expected a callable"),
            (dict(make_model=make, data=rows, batch_size=0), "batch_size: got 0"),
            (dict(make_model=make, data=rows, batch_size=True), "batch_size: got True"),
            (dict(make_model=make, data=x), "data: got numpy.ndarray; expected a dask.array"),
            (dict(make_model=make, data=frame), "expected one column (data['t'])"),
            (dict(make_model=make, data=rows[:0]), "data: has no rows"),
            (dict(make_model=make, data=rows[rows[:, 0] > 10]), "unknown chunk sizes"),
            (dict(make_model=lambda: lambda b: b[:-1], data=rows), "returned shape (9, 40) for "
             "a batch of 10 rows; expected one result row per input row"),
            (dict(make_model=lambda: 5, data=rows), "make_model: returned int; expected a "
             "callable"),
            (dict(make_model=lambda: _reject_past_the_end, data=rows), "RowError: rows [10] for "
             "a batch of 10; expected one or more positions in [0, batch length)"),
    ]:
        with pytest.raises(dnnq.InvalidArguments) as e:
            dqd.map_batches(**kwargs, client=client)
        assert message in str(e.value), (kwargs, str(e.value))
    values = da.from_array(x, chunks=5)
    for args, message in [((x, "p"), "values: got ndarray; expected a dask.array"),
                          ((values, "p", values), "errors: got (10, 40); expected a dask.array "
                           "of shape (10,)")]:
        with pytest.raises(dnnq.InvalidArguments, match=re.escape(message)):
            dqd.to_parquet(*args[:2], errors=args[2] if len(args) > 2 else None, client=client)


def _reject_past_the_end(batch):
    raise dqd.RowError({len(batch): "no such row"})


def test_import_dnnq_needs_no_dask():
    code = "import sys, dnnq; assert not any(m.split('.')[0] in ('dask', 'distributed', " \
           "'pyarrow') for m in sys.modules), sorted(sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr


def test_without_a_cluster_the_model_loads_once_in_this_process(tmp_path):
    code = textwrap.dedent("""
        import sys, numpy as np, dask.array as da, dnnq.distributed as dqd
        def make():
            with open(sys.argv[1], "a") as f:
                f.write("load\\n")
            return lambda b: b.astype(np.int64) * 3
        x = np.arange(202).reshape(101, 2)
        for batch in (4, 7):
            got = dqd.map_batches(make, da.from_array(x, chunks=9), batch_size=batch)
            assert np.array_equal(got.compute(scheduler="threads"), x * 3)
        print(dqd.load_times(make).keys())
    """)
    loads = str(tmp_path / "loads")
    r = subprocess.run([sys.executable, "-c", code, loads], cwd="/", capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert _lines(loads) == ["load"]
    assert r.stdout.strip() == "dict_keys(['local'])"


# --- fault tolerance (last: the restarted worker loads every model registered so far) -------

def test_worker_restart_mid_job_loses_no_row(client, tmp_path):
    x, w, want = _int_data(400, seed=5)
    loads, calls = str(tmp_path / "loads"), str(tmp_path / "calls")
    make = functools.partial(make_int_linear, w, loads, calls, 0.03)
    values = dqd.map_batches(make, da.from_array(x, chunks=40), batch_size=4, client=client)
    before = _worker_pids(client)
    job = client.compute(values)
    deadline = time.monotonic() + 60
    while len(_lines(calls)) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    busy = [w for w, keys in client.processing().items() if keys]
    assert busy and not job.done(), "the job ended before a worker could be restarted"
    client.restart_workers(busy[:1])
    got = job.result(timeout=120)
    assert np.array_equal(got, want)                  # every row, in order, exactly once
    after = _worker_pids(client)
    assert len(before & after) == 1 and len(after) == 2
    pids = _lines(loads)                              # one load per worker process
    assert sorted(pids) == sorted(set(pids)) and set(pids) == {str(p) for p in before | after}
    # the restarted worker's batches ran again: more calls than the 100 batches + the probe
    assert len(_lines(calls)) > 101
