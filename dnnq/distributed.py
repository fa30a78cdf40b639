"""Batch inference on a Dask cluster: ``map_batches`` runs a per-batch model over the rows of a
``dask.array``, a ``dask.bag`` or a ``dask.dataframe`` column, loading the model once per
worker, and gives the results as a lazy ``dask.array`` in input order (SPEC section 12; user
guide: docs/distributed.md).

Needs the extra ``distributed``: ``pip install 'dnnq[distributed]'`` (Dask and pyarrow);
``import dnnq`` never imports Dask.

* The batches are the same as in one process: rows ``[k * batch_size, (k + 1) * batch_size)``
  of the whole input, whatever its partitioning, so that a model whose result for a row
  depends on the other rows of its batch (padding to the batch's longest sentence, say) gives
  the same bits as ``numpy.concatenate([model(rows[i:i + b]) for i in range(0, n, b)])``.
* ``make_model()`` runs once per worker process, from a worker plugin registered when
  ``map_batches`` is called (and on every worker that joins or restarts later); tasks find
  the model in their process.  Without a ``dask.distributed`` client the model is loaded
  once in the calling process and Dask's local scheduler runs the batches.
* A model rejects rows by raising :class:`RowError` naming them; their results are NaN (0 for
  integer results) and :func:`map_batches_with_errors` gives the messages, one per row.  Any
  other exception fails the job as usual.
* A worker lost mid-job loses no rows: Dask recomputes the batches it held.
"""
import asyncio
import math
import os
import threading
import time

import numpy as np

from dnnq.errors import InvalidArguments

try:
    import dask
    import dask.array as da
    from dask.base import tokenize
except ImportError:  # pragma: no cover - the extra is not installed
    raise ImportError("dnnq.distributed needs Dask: pip install 'dnnq[distributed]' "
                      "(dask[distributed] and pyarrow)") from None
try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - dask without dask.distributed: local scheduler only
    WorkerPlugin = object

__all__ = ["map_batches", "map_batches_with_errors", "to_parquet", "RowError", "load_times"]

# at most this many batches per chunk of rows (one task): a lost worker costs at most one
# chunk per thread, and a chunk's results stay small (64 x 32 x 384 float32 = 3 MB)
_MAX_BATCHES_PER_CHUNK = 64
# and at least this many chunks per worker thread, for balance and a moving progress bar
_CHUNKS_PER_THREAD = 8


class RowError(InvalidArguments):
    """Raised by a model to reject some rows of its batch.

    :func:`map_batches` records the messages (see :func:`map_batches_with_errors`) and calls
    the model again on the remaining rows of the batch; the job goes on.

    Parameters
    ----------
    rows : dict
        ``{position in the batch: message}``, one entry per rejected row.

    Examples
    --------
    >>> def model(texts):                                          # doctest: +SKIP
    ...     bad = {i: "empty text" for i, t in enumerate(texts) if not t.strip()}
    ...     if bad:
    ...         raise RowError(bad)
    ...     return encode(texts)
    """

    def __init__(self, rows):
        rows = dict(rows)
        self.rows = rows
        first = ", ".join(f"row {i}: {m}" for i, m in list(rows.items())[:3])
        super().__init__(f"{len(rows)} row(s) rejected ({first}{', ...' if len(rows) > 3 else ''})")

    def __reduce__(self):
        return RowError, (self.rows,)


# --- the model, once per process ---------------------------------------------------------

_models = {}      # key -> the callable make_model() returned, in this process
_load_seconds = {}
_load_lock = threading.Lock()


class _ModelRef:
    """What every task carries: the model's key and ``make_model`` (small: a function or a
    partial of one)."""

    __slots__ = ("key", "make_model")

    def __init__(self, key, make_model):
        self.key, self.make_model = key, make_model

    def __dask_tokenize__(self):
        return self.key

    def __reduce__(self):
        return _ModelRef, (self.key, self.make_model)

    def get(self):
        model = _models.get(self.key)
        if model is None:
            with _load_lock:  # one load even when several worker threads ask at once
                model = _models.get(self.key)
                if model is None:
                    t0 = time.perf_counter()
                    model = self.make_model()
                    if not callable(model):
                        raise InvalidArguments(
                            f"make_model: returned {type(model).__name__}; expected a callable "
                            "batch -> numpy array")
                    _load_seconds[self.key] = time.perf_counter() - t0
                    _models[self.key] = model
        return model


class _ModelPlugin(WorkerPlugin):
    """Loads the model when a worker starts (or when registered on running workers)."""

    idempotent = True  # registering it again (another map_batches call) does not reload

    def __init__(self, ref):
        self.ref = ref

    async def setup(self, worker):
        # in a thread: a load of seconds would otherwise hold up the worker's event loop
        # (heartbeats, data transfers); a task that needs the model meanwhile waits for it
        await asyncio.to_thread(self.ref.get)

    def teardown(self, worker):
        _models.pop(self.ref.key, None)
        _load_seconds.pop(self.ref.key, None)


def _model_key(make_model):
    return "dnnq-model-" + tokenize(make_model)


def _loaded_seconds(key):
    return _load_seconds.get(key)


def load_times(make_model, client=None):
    """The seconds ``make_model()`` took on each worker that has loaded it.

    Parameters
    ----------
    make_model : callable
        The same ``make_model`` as given to :func:`map_batches` (or an equal ``partial``).
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    dict
        ``{worker address: seconds}``; ``{"local": seconds}`` without a ``dask.distributed``
        client; empty when no worker has loaded the model.
    """
    client = _client(client)
    key = _model_key(make_model)
    if client is None:
        return {"local": _load_seconds[key]} if key in _load_seconds else {}
    got = client.run(_loaded_seconds, key)
    return {w: s for w, s in got.items() if s is not None}


# --- running the batches ------------------------------------------------------------------

def _run_batch(model, rows):
    """The model on one batch, minus the rows it rejects.  Returns (positions kept, their
    results, {position: message})."""
    keep = list(range(len(rows)))
    errors = {}
    while keep:
        sub = rows if len(keep) == len(rows) else \
            ([rows[i] for i in keep] if isinstance(rows, list) else rows[keep])
        try:
            out = model(sub)
        except RowError as e:
            bad = e.rows
            if not bad or any(not isinstance(i, (int, np.integer)) or not 0 <= i < len(keep)
                              for i in bad):
                raise InvalidArguments(
                    f"RowError: rows {sorted(bad, key=str)!r} for a batch of {len(keep)}; "
                    "expected one or more positions in [0, batch length)") from e
            for i, message in bad.items():
                errors[keep[i]] = str(message)
            keep = [k for j, k in enumerate(keep) if j not in bad]
            continue
        out = np.asarray(out)
        if out.ndim == 0 or out.shape[0] != len(keep):
            raise InvalidArguments(
                f"make_model's model: returned shape {out.shape} for a batch of {len(keep)} "
                "rows; expected one result row per input row")
        return keep, out, errors
    return keep, None, errors


def _rows(block, as_list):
    return block.tolist() if as_list else block


def _probe(ref, block, batch_size, as_list):
    """(row shape, dtype) of the model's results: the first batch of the block with a
    result, or None when the model rejects every row of the block."""
    model = ref.get()
    rows = _rows(block, as_list)
    for lo in range(0, len(rows), batch_size):
        keep, out, _ = _run_batch(model, rows[lo:lo + batch_size])
        if keep:
            return out.shape[1:], out.dtype
    return None


def _run_block(ref, block, batch_size, as_list, row_shape, dtype):
    """One chunk of rows (a whole number of batches): (results, error messages)."""
    model = ref.get()
    rows = _rows(block, as_list)
    n = len(rows)
    values = np.empty((n, *row_shape), dtype)
    errors = np.full(n, None, dtype=object)
    for lo in range(0, n, batch_size):
        keep, out, errs = _run_batch(model, rows[lo:lo + batch_size])
        if keep:
            if out.shape[1:] != row_shape or out.dtype != dtype:
                raise InvalidArguments(
                    f"make_model's model: returned {out.dtype} rows of shape {out.shape[1:]} "
                    f"for a batch; expected {dtype} rows of shape {row_shape}, as for the "
                    "first batch")
            if len(keep) == min(batch_size, n - lo):
                values[lo:lo + len(keep)] = out
            else:
                values[[lo + k for k in keep]] = out
        for k, message in errs.items():
            values[lo + k] = np.nan if values.dtype.kind in "fc" else 0
            errors[lo + k] = message
    return values, errors


# --- the input as one dask.array of rows ----------------------------------------------------

def _client(client):
    if client is not None:
        return client
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def _compute(client, *objs):
    if client is None:
        return dask.compute(*objs)
    return tuple(client.gather(client.compute(list(objs))))


def _partition_array(part):
    if hasattr(part, "to_numpy"):  # a pandas Series
        return part.to_numpy()
    out = np.empty(len(part), dtype=object)
    for i, item in enumerate(part):  # item by item: tuples or lists stay items
        out[i] = item
    return out


def _dask_dataframe():
    import dask.dataframe  # only for a dask.dataframe input: pandas is then installed
    return dask.dataframe


def _as_rows(data, client):
    """(dask.array with rows on axis 0, whether the model gets lists)."""
    if isinstance(data, da.Array):
        if data.ndim == 0:
            raise InvalidArguments("data: got a 0-d dask.array; expected rows along axis 0")
        if any(math.isnan(c) for c in data.chunks[0]):
            raise InvalidArguments("data: a dask.array with unknown chunk sizes; expected known "
                                   "ones (call data.compute_chunk_sizes() first)")
        return data, False
    kind = type(data).__module__ + "." + type(data).__name__
    if kind.startswith("dask.bag"):
        parts = data.to_delayed()
        dtype = object
    elif kind.startswith("dask.dataframe") and isinstance(data, _dask_dataframe().Series):
        parts = data.to_delayed()
        dtype = data._meta.to_numpy().dtype
    elif kind.startswith("dask.dataframe") and isinstance(data, _dask_dataframe().DataFrame):
        names = list(data.columns)
        raise InvalidArguments(f"data: got a dask DataFrame with columns {names[:5]}; expected "
                               f"one column (data[{names[0] if names else 'name'!r}])")
    else:
        raise InvalidArguments(f"data: got {kind}; expected a dask.array (rows along axis 0), "
                               "a dask.bag or a dask.dataframe column")
    # the partitions' lengths, to cut the batches where one process would (one pass over
    # the input, as dask's own to_dask_array(lengths=True))
    lengths = _compute(client, *[dask.delayed(len)(p) for p in parts])
    blocks = [da.from_delayed(dask.delayed(_partition_array)(p), shape=(n,), dtype=dtype)
              for p, n in zip(parts, lengths) if n]
    if not blocks:
        raise InvalidArguments("data: has no rows; expected at least one")
    return da.concatenate(blocks), True


def _chunk_rows(x, batch_size, client):
    n = x.shape[0]
    threads = sum(client.nthreads().values()) if client is not None else os.cpu_count() or 1
    rows = min(max(x.chunks[0]), math.ceil(n / (_CHUNKS_PER_THREAD * max(threads, 1))),
               _MAX_BATCHES_PER_CHUNK * batch_size)
    return max(batch_size, -(-rows // batch_size) * batch_size)


def map_batches_with_errors(make_model, data, *, batch_size=32, client=None):
    """:func:`map_batches`, and a message for every row the model rejected.

    Parameters are those of :func:`map_batches`.

    Returns
    -------
    values : dask.array.Array
        As :func:`map_batches` returns it: NaN rows (0 for an integer result) where the model
        rejected the row.
    errors : dask.array.Array
        Object array of shape ``(rows,)``: None where the row has a result, the model's
        message (:class:`RowError`) where it was rejected.  It comes from the same tasks as
        ``values``: computing both together runs the model once.

    Raises
    ------
    InvalidArguments
        As :func:`map_batches`.

    Examples
    --------
    >>> values, errors = map_batches_with_errors(make_model, texts)     # doctest: +SKIP
    >>> values, errors = client.persist([values, errors])               # doctest: +SKIP
    >>> to_parquet(values, "out/", errors=errors)                       # doctest: +SKIP
    """
    if not callable(make_model):
        raise InvalidArguments(f"make_model: got {type(make_model).__name__}; expected a "
                               "callable that returns the model (batch -> numpy array)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise InvalidArguments(f"batch_size: got {batch_size!r}; expected a positive int")
    batch_size = int(batch_size)
    client = _client(client)
    x, as_list = _as_rows(data, client)
    if x.shape[0] == 0:
        raise InvalidArguments("data: has no rows; expected at least one")
    ref = _ModelRef(_model_key(make_model), make_model)
    if client is not None:
        try:
            client.register_plugin(_ModelPlugin(ref), name=ref.key)
        except Exception:
            # make_model failed on a worker: not left registered for workers yet to start
            try:
                client.unregister_worker_plugin(ref.key)
            except Exception:
                pass
            raise
    x = x.rechunk({0: _chunk_rows(x, batch_size, client),
                   **{axis: -1 for axis in range(1, x.ndim)}})
    blocks = x.to_delayed(optimize_graph=False).reshape(-1)
    sizes = x.chunks[0]

    meta = None
    for block in blocks:  # the results' row shape and dtype, from the first accepted batch
        meta, = _compute(client, dask.delayed(_probe, pure=True)(ref, block, batch_size, as_list))
        if meta is not None:
            break
    if meta is None:
        raise InvalidArguments("data: the model rejected every row (RowError); no result to "
                               "take a shape and dtype from")
    row_shape, dtype = meta

    run = dask.delayed(_run_block, pure=True)
    token = tokenize(ref, x.name, batch_size, as_list, row_shape, str(dtype))
    values, errors = [], []
    for i, (block, n) in enumerate(zip(blocks, sizes)):
        out = run(ref, block, batch_size, as_list, row_shape, dtype,
                  dask_key_name=f"dnnq-batches-{token}-{i}")
        values.append(da.from_delayed(out[0], shape=(n, *row_shape), dtype=dtype))
        errors.append(da.from_delayed(out[1], shape=(n,), dtype=object))
    return da.concatenate(values), da.concatenate(errors)


def map_batches(make_model, data, *, batch_size=32, client=None):
    """The model's results for every row of ``data``, as a lazy ``dask.array`` in input order.

    The batches are ``batch_size`` consecutive rows of the whole input, as in one process, so
    the result equals ``numpy.concatenate([model(rows[i:i + batch_size]) for i in range(0,
    n, batch_size)])`` bit for bit.  Working out the result's shape runs the model on the
    first batch, on a worker, when ``map_batches`` is called; for a bag or a column, the
    partitions' lengths are counted first (one pass over the input).

    Parameters
    ----------
    make_model : callable
        ``make_model()`` returns the model, a callable ``batch -> numpy array`` with one
        result row per input row.  It runs once per Dask worker process (a worker plugin
        named after its ``dask.base.tokenize``; workers that join or restart later load it
        too), or once in this process without a ``dask.distributed`` client.  The model may
        reject rows by raising :class:`RowError`.
    data : dask.array.Array, dask.bag.Bag or dask.dataframe.Series
        The rows: along axis 0 of a ``dask.array`` (batches are numpy arrays), the items of a
        bag or the values of a dataframe column (batches are lists).
    batch_size : int, default 32
        Rows per call of the model.
    client : distributed.Client, optional
        Default: the current client; without any, Dask's local scheduler in this process.

    Returns
    -------
    dask.array.Array
        Shape ``(rows, *row_shape)``, with the row shape and dtype of the model's results;
        NaN rows (0 for an integer result) where the model rejected the row (the messages:
        :func:`map_batches_with_errors`).

    Raises
    ------
    InvalidArguments
        ``make_model`` not callable or returning no callable; ``batch_size`` not a positive
        int; ``data`` of another type, without rows or with unknown chunk sizes; a model
        returning another number of rows than it was given, or rows of another shape or
        dtype than for the first batch.

    Examples
    --------
    >>> import functools, dask.bag as db                                 # doctest: +SKIP
    >>> from distributed import Client, LocalCluster
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    >>> texts = db.read_text("corpus.txt")
    >>> emb = map_batches(functools.partial(load_encoder, "model/"), texts, batch_size=32)
    >>> emb.shape
    (20000, 384)
    """
    return map_batches_with_errors(make_model, data, batch_size=batch_size, client=client)[0]


# --- Parquet ------------------------------------------------------------------------------

def _write_part(values, errors, first_row, path, index, column):
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = values.shape[0]
    bad = np.zeros(n, bool) if errors is None else np.array([e is not None for e in errors])
    flat = values.reshape(n, -1) if values.ndim > 1 else values
    if values.ndim > 1:
        width = flat.shape[1]
        inner = pa.array(np.ascontiguousarray(flat).reshape(-1))
        col = pa.FixedSizeListArray.from_arrays(inner, width, mask=pa.array(bad))
    else:
        col = pa.array(flat, mask=bad)
    table = pa.table({"row": pa.array(np.arange(first_row, first_row + n, dtype=np.int64)),
                      column: col,
                      "error": pa.array(list(errors) if errors is not None else [None] * n,
                                        type=pa.string())})
    if values.ndim > 2:
        table = table.replace_schema_metadata({b"dnnq.row_shape": str(values.shape[1:]).encode()})
    os.makedirs(path, exist_ok=True)
    pq.write_table(table, os.path.join(path, f"part-{index:05d}.parquet"))
    return n


def to_parquet(values, path, *, errors=None, column="value", client=None, compute=True):
    """Write results as a Parquet dataset, from the workers (nothing is collected here).

    One file per chunk of rows, ``path/part-00000.parquet``, ..., written with pyarrow by the
    task that holds the chunk.  Columns: ``row`` (the input row, int64); ``column`` (the row's
    result: a scalar, or a fixed-size list of its values flattened); ``error`` (null, or the
    model's message; the result is then null).

    Parameters
    ----------
    values : dask.array.Array
        Rows along axis 0, e.g. from :func:`map_batches`.
    path : str
        A directory every worker can write to (made if missing).
    errors : dask.array.Array, optional
        The second result of :func:`map_batches_with_errors`, shape ``(rows,)``.
    column : str, default "value"
        The name of the results' column.
    client : distributed.Client, optional
        Default: the current client.
    compute : bool, default True
        False: return the lazy ``dask.delayed`` of the row count instead.

    Returns
    -------
    int or dask.delayed.Delayed
        The number of rows written.

    Raises
    ------
    InvalidArguments
        ``values`` not a dask.array with rows; ``errors`` not a dask.array of one entry per
        row.

    Examples
    --------
    >>> to_parquet(values, "embeddings/", errors=errors, column="embedding")  # doctest: +SKIP
    20000
    """
    if not isinstance(values, da.Array) or values.ndim == 0:
        raise InvalidArguments(f"values: got {type(values).__name__}; expected a dask.array "
                               "with rows along axis 0")
    if errors is not None and (not isinstance(errors, da.Array)
                               or errors.shape != values.shape[:1]):
        raise InvalidArguments(f"errors: got {getattr(errors, 'shape', type(errors).__name__)}; "
                               f"expected a dask.array of shape {values.shape[:1]}")
    values = values.rechunk({axis: -1 for axis in range(1, values.ndim)})
    if errors is not None:
        errors = errors.rechunk((values.chunks[0],))
    v_blocks = values.to_delayed(optimize_graph=False).reshape(-1)
    e_blocks = errors.to_delayed(optimize_graph=False).reshape(-1) if errors is not None \
        else [None] * len(v_blocks)
    starts = np.concatenate([[0], np.cumsum(values.chunks[0])[:-1]]).tolist()
    write = dask.delayed(_write_part, pure=False)
    parts = [write(v, e, start, str(path), i, column)
             for i, (v, e, start) in enumerate(zip(v_blocks, e_blocks, starts))]
    total = dask.delayed(sum, pure=False)(parts)
    if not compute:
        return total
    return _compute(_client(client), total)[0]
