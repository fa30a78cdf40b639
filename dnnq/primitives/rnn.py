"""The RNN primitives users create: LSTM, GRU, LBR-GRU and vanilla RNN (their descriptors,
support tables and examples); the shared validation, quantization and execution are
_rnn_base._RNN."""
from dnnq.errors import InvalidArguments
from dnnq.primitives._rnn_base import ACTIVATIONS, _RNN
from dnnq.primitives._rnn_base import DIRECTIONS, _ALL_NAMES  # noqa: F401 (re-exported)
from dnnq.primitives._rnn_weights import PackedRnnWeights  # noqa: F401 (re-exported)

__all__ = ["LSTM", "GRU", "LBRGRU", "VanillaRNN", "PackedRnnWeights"]


class LSTM(_RNN):
    """int8 LSTM inference, oneDNN 3.2's quantized LSTM (gates i, f, c~, o).

    Runs every time step, layer and direction in one ``execute``.  Bit-identical to oneDNN
    3.2 (LSTM and LSTMP); peepholes, which oneDNN refuses in int8, follow its f32 cell's
    operations.  The user guide's RNN page has the formulas and a recipe from float32
    weights.

    Parameters
    ----------
    direction : str
        ``"unidirectional_left2right"``, ``"unidirectional_right2left"``,
        ``"bidirectional_concat"`` (``dst_layer`` has ``2 H`` channels) or
        ``"bidirectional_sum"``.  As in oneDNN, each direction is its own stack of layers:
        layer l reads layer l - 1 of the same direction, so several layers need ``C == H``.
    src_layer_desc : MemoryDesc
        The input sequence, ``tnc`` ``(T, N, C)``: u8 (u8 mode) or f32 (f32 mode).
    src_iter_desc, src_iter_c_desc : MemoryDesc or None
        The initial hidden and cell states, ``ldnc`` ``(L, D, N, H)``: u8 / f32 and f32.
        None: h starts from the quantized 0.0 and c from 0.
    weights_layer_desc, weights_iter_desc : MemoryDesc
        s8, ``ldigo`` ``(L, D, C, 4, H)`` and ``(L, D, H, 4, H)``.
    bias_desc : MemoryDesc or None
        f32, ``ldgo`` ``(L, D, 4, H)``.
    dst_layer_desc : MemoryDesc or None
        The output sequence ``(T, N, H)`` (``2 H`` for bidirectional_concat): u8, or f32
        (the dequantized u8 values).
    dst_iter_desc, dst_iter_c_desc : MemoryDesc or None
        The last hidden and cell states, ``(L, D, N, H)``.
    attr : PrimitiveAttr, optional
        The quantization, in one of two forms (mixing them raises InvalidArguments):
        legacy, :meth:`PrimitiveAttr.set_rnn_data_qparams` (``u8 = scale * x + shift``)
        and :meth:`PrimitiveAttr.set_rnn_weights_qparams` (``s8 = wscale * w``, mask 0 or
        24 = per gate and channel); or unified, ``set_scales_mask`` /
        ``set_zero_points_mask`` on ``DNNL_ARG_SRC_LAYER`` (mask 0) and ``set_scales_mask``
        on ``DNNL_ARG_WEIGHTS_LAYER`` and ``DNNL_ARG_WEIGHTS_ITER`` (0 or 24), with the
        values at execution.  u8 data needs the data parameters.  No post-ops.
    weights_peephole_desc : MemoryDesc, optional
        Keyword-only extension: f32 ``(L, D, 3, H)``, the peephole weights of gates i, f, o
        (execute key ``DNNL_ARG_WEIGHTS_PEEPHOLE``).
    weights_projection_desc : MemoryDesc, optional
        Keyword-only extension: s8 ``ldio`` ``(L, D, H, P)``, an LSTMP (execute key
        ``DNNL_ARG_WEIGHTS_PROJECTION``).  The projected h has P channels: ``src_iter`` /
        ``dst_iter`` are ``(L, D, N, P)``, ``dst_layer`` ``(T, N, P)``, ``weights_iter``
        ``(L, D, P, 4, H)``; its scales come from
        :meth:`PrimitiveAttr.set_rnn_weights_projection_qparams` (mask 0 or 8).

    Attributes
    ----------
    impl_info : str
        ``<level>:rnn_fused_cell``.

    Raises
    ------
    InvalidArguments
        An unknown direction, dims that do not fit together, missing quantization
        parameters for u8 data, both quantization forms at once.
    Unimplemented
        A data type, argument or mask outside the support table, post-ops.

    See Also
    --------
    GRU, LBRGRU, VanillaRNN, dnnq.calibrate.rnn_data_qparams,
    dnnq.calibrate.rnn_weights_qparams

    Notes
    -----
    Data keys of ``execute`` (returns a dict of the outputs that have a descriptor):

    - ``DNNL_ARG_SRC_LAYER`` (x, ``tnc``), ``DNNL_ARG_SRC_ITER`` (h0, ``ldnc``),
      ``DNNL_ARG_SRC_ITER_C`` (c0, ``ldnc``, f32);
    - ``DNNL_ARG_WEIGHTS_LAYER`` and ``DNNL_ARG_WEIGHTS_ITER`` (``ldigo``, plain or from
      :meth:`prepare_weights`), ``DNNL_ARG_BIAS`` (``ldgo``), ``DNNL_ARG_WEIGHTS_PEEPHOLE``,
      ``DNNL_ARG_WEIGHTS_PROJECTION``;
    - outputs ``DNNL_ARG_DST_LAYER`` (``tnc``), ``DNNL_ARG_DST_ITER`` and
      ``DNNL_ARG_DST_ITER_C`` (``ldnc``);
    - unified quantization: ``DNNL_ARG_SCALE | DNNL_ARG_SRC_LAYER``,
      ``DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC_LAYER``, ``DNNL_ARG_SCALE |
      DNNL_ARG_WEIGHTS_LAYER`` / ``| DNNL_ARG_WEIGHTS_ITER``.

    Layouts are oneDNN's: ``tnc`` ``(T, N, C)`` for the sequences, ``ldnc`` ``(L, D, N, H)``
    for the states, ``ldigo`` ``(L, D, I, G, H)`` for the weights, ``ldgo`` ``(L, D, G, H)``
    for the bias (L layers, D directions: 2 for the bidirectional ones, G = 4 gates in the
    order i, f, c~, o).  Directions: ``unidirectional_left2right``,
    ``unidirectional_right2left``, ``bidirectional_concat``, ``bidirectional_sum``.

    Support table

    ===========================  ===================  ==============================
    tensor                       u8 mode              f32 mode (dynamic quantization)
    ===========================  ===================  ==============================
    src_layer                    u8                   f32
    src_iter / dst_iter          u8                   f32
    src_iter_c / dst_iter_c      f32                  f32
    weights_layer / _iter        s8                   s8
    bias                         f32                  f32
    dst_layer                    u8 or f32            f32
    ===========================  ===================  ==============================

    In f32 mode the inputs are quantized with the data parameters, the u8 engine runs, and
    the outputs are the dequantized u8 values: exactly the u8 mode's results.

    Examples
    --------
    One layer, T = 3 steps, batch 1, C = H = 4, legacy quantization:

    >>> import numpy as np, dnnq
    >>> md = dnnq.MemoryDesc
    >>> T, N, C, H = 3, 1, 4, 4
    >>> attr = dnnq.PrimitiveAttr()
    >>> _ = attr.set_rnn_data_qparams(64.0, 128.0)         # u8 = 64 x + 128
    >>> _ = attr.set_rnn_weights_qparams(0, 100.0)         # s8 = 100 w
    >>> lstm = dnnq.LSTM("unidirectional_left2right", md((T, N, C), "u8"), None, None,
    ...                  md((1, 1, C, 4, H), "s8"), md((1, 1, H, 4, H), "s8"),
    ...                  md((1, 1, 4, H), "f32"), md((T, N, H), "f32"),
    ...                  md((1, 1, N, H), "u8"), md((1, 1, N, H), "f32"), attr=attr)
    >>> x = np.full((T, N, C), 128 + 32, np.uint8)         # x = 0.5
    >>> out = lstm.execute({dnnq.DNNL_ARG_SRC_LAYER: x,
    ...                     dnnq.DNNL_ARG_WEIGHTS_LAYER: np.full((1, 1, C, 4, H), 10, np.int8),
    ...                     dnnq.DNNL_ARG_WEIGHTS_ITER: np.zeros((1, 1, H, 4, H), np.int8),
    ...                     dnnq.DNNL_ARG_BIAS: np.zeros((1, 1, 4, H), np.float32)})
    >>> h = out[dnnq.DNNL_ARG_DST_LAYER]                    # f32: the dequantized h
    >>> h.shape, h.dtype, sorted(dnnq.name(k) for k in out)
    ((3, 1, 4), dtype('float32'), ['dst', 'dst_1', 'dst_2'])
    """

    _cell = "lstm"
    _name = "LSTM"

    def __init__(self, direction, src_layer_desc, src_iter_desc, src_iter_c_desc,
                 weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc,
                 dst_iter_desc, dst_iter_c_desc, attr=None, *, weights_peephole_desc=None,
                 weights_projection_desc=None):
        self._setup(direction, None, src_layer_desc, src_iter_desc, src_iter_c_desc,
                    weights_layer_desc, weights_iter_desc, bias_desc, dst_layer_desc,
                    dst_iter_desc, dst_iter_c_desc, attr, weights_peephole_desc,
                    weights_projection_desc)


class GRU(_RNN):
    """int8 GRU inference, oneDNN 3.2's quantized GRU (gates u, r, o).

    Bit-identical to oneDNN 3.2: ``r * h`` is requantized to u8 before the ``U_o`` product,
    as oneDNN does.  Layouts, directions, quantization forms and the f32 mode are those of
    :class:`LSTM`, with G = 3 gates and no cell state.

    Parameters
    ----------
    direction : str
        As for :class:`LSTM`.
    src_layer_desc : MemoryDesc
        ``(T, N, C)``, u8 or f32.
    src_iter_desc : MemoryDesc or None
        ``(L, D, N, H)``, u8 or f32.
    weights_layer_desc, weights_iter_desc : MemoryDesc
        s8 ``(L, D, C, 3, H)`` and ``(L, D, H, 3, H)``.
    bias_desc : MemoryDesc or None
        f32 ``(L, D, 3, H)``.
    dst_layer_desc : MemoryDesc or None
        ``(T, N, H)`` (``2 H`` for bidirectional_concat), u8 or f32.
    dst_iter_desc : MemoryDesc or None
        ``(L, D, N, H)``.
    attr : PrimitiveAttr, optional
        The quantization, as for :class:`LSTM`.

    Attributes
    ----------
    impl_info : str
        ``<level>:rnn_fused_cell``.

    Raises
    ------
    InvalidArguments
        An unknown direction, dims that do not fit together, missing or mixed quantization
        parameters.
    Unimplemented
        A data type, argument or mask outside the support table.

    See Also
    --------
    LSTM, LBRGRU

    Notes
    -----
    Data keys of ``execute``: ``DNNL_ARG_SRC_LAYER``, ``DNNL_ARG_SRC_ITER``,
    ``DNNL_ARG_WEIGHTS_LAYER``, ``DNNL_ARG_WEIGHTS_ITER``, ``DNNL_ARG_BIAS``; it returns
    ``{DNNL_ARG_DST_LAYER: ..., DNNL_ARG_DST_ITER: ...}``.  Support table: as
    :class:`LSTM`'s, without the cell state.

    Examples
    --------
    A bidirectional GRU (``D = 2``) with the two directions' outputs concatenated:

    >>> import numpy as np, dnnq
    >>> md = dnnq.MemoryDesc
    >>> T, N, C, H = 4, 2, 8, 8
    >>> attr = dnnq.PrimitiveAttr().set_rnn_data_qparams(64.0, 128.0)
    >>> gru = dnnq.GRU("bidirectional_concat", md((T, N, C), "u8"), None,
    ...                md((1, 2, C, 3, H), "s8"), md((1, 2, H, 3, H), "s8"),
    ...                md((1, 2, 3, H), "f32"), md((T, N, 2 * H), "u8"), None, attr=attr)
    >>> w = np.zeros((1, 2, C, 3, H), np.int8)
    >>> out = gru.execute({dnnq.DNNL_ARG_SRC_LAYER: np.full((T, N, C), 128, np.uint8),
    ...                    dnnq.DNNL_ARG_WEIGHTS_LAYER: w, dnnq.DNNL_ARG_WEIGHTS_ITER: w,
    ...                    dnnq.DNNL_ARG_BIAS: np.zeros((1, 2, 3, H), np.float32)})
    >>> out[dnnq.DNNL_ARG_DST_LAYER].shape          # h stays 0.0, i.e. u8 128
    (4, 2, 16)
    >>> int(out[dnnq.DNNL_ARG_DST_LAYER].min()), int(out[dnnq.DNNL_ARG_DST_LAYER].max())
    (128, 128)
    """

    _cell = "gru"
    _name = "GRU"

    def __init__(self, direction, src_layer_desc, src_iter_desc, weights_layer_desc,
                 weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, attr=None):
        self._setup(direction, None, src_layer_desc, src_iter_desc, None, weights_layer_desc,
                    weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, None, attr)


class LBRGRU(_RNN):
    """int8 linear-before-reset GRU (gates u, r, o; bias ``(L, D, 4, H)``).

    ``o = tanh(W_o x + b_o + r * (U_o h + b_u))``: the recurrent product of the output gate is
    dequantized on its own and multiplied by r.  oneDNN 3.2 has no int8 LBR-GRU: dnnq uses the
    same pieces as its GRU, and the tests compare with a numpy model.

    Parameters
    ----------
    direction : str
        As for :class:`LSTM`.
    src_layer_desc, src_iter_desc, weights_layer_desc, weights_iter_desc : MemoryDesc
        As for :class:`GRU`.
    bias_desc : MemoryDesc or None
        f32 ``(L, D, 4, H)``: the three gates' biases and the bias of ``U_o h``.
    dst_layer_desc, dst_iter_desc : MemoryDesc or None
        As for :class:`GRU`.
    attr : PrimitiveAttr, optional
        The quantization, as for :class:`LSTM`.

    Attributes
    ----------
    impl_info : str
        ``<level>:rnn_fused_cell``.

    Raises
    ------
    InvalidArguments
        An unknown direction, dims that do not fit together, missing or mixed quantization
        parameters.
    Unimplemented
        A data type, argument or mask outside the support table.

    See Also
    --------
    GRU, LSTM

    Notes
    -----
    Data keys of ``execute``: as :class:`GRU`.  Support table: as :class:`LSTM`'s, without the
    cell state.

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> md = dnnq.MemoryDesc
    >>> attr = dnnq.PrimitiveAttr().set_rnn_data_qparams(64.0, 128.0)
    >>> lbr = dnnq.LBRGRU("unidirectional_left2right", md((2, 1, 4), "u8"), None,
    ...                   md((1, 1, 4, 3, 4), "s8"), md((1, 1, 4, 3, 4), "s8"),
    ...                   md((1, 1, 4, 4), "f32"), md((2, 1, 4), "f32"), None, attr=attr)
    >>> w = np.zeros((1, 1, 4, 3, 4), np.int8)
    >>> out = lbr.execute({dnnq.DNNL_ARG_SRC_LAYER: np.full((2, 1, 4), 128, np.uint8),
    ...                    dnnq.DNNL_ARG_WEIGHTS_LAYER: w, dnnq.DNNL_ARG_WEIGHTS_ITER: w,
    ...                    dnnq.DNNL_ARG_BIAS: np.zeros((1, 1, 4, 4), np.float32)})
    >>> out[dnnq.DNNL_ARG_DST_LAYER]                 # f32: the dequantized h
    array([[[0., 0., 0., 0.]],
    <BLANKLINE>
           [[0., 0., 0., 0.]]], dtype=float32)
    """

    _cell = "lbr_gru"
    _name = "LBRGRU"

    def __init__(self, direction, src_layer_desc, src_iter_desc, weights_layer_desc,
                 weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, attr=None):
        self._setup(direction, None, src_layer_desc, src_iter_desc, None, weights_layer_desc,
                    weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, None, attr)


class VanillaRNN(_RNN):
    """int8 vanilla RNN cell, ``h = act(W x + U h + b)`` (one gate).

    oneDNN 3.2 has no int8 vanilla RNN: dnnq uses the same pieces as its LSTM, and the tests
    compare with a numpy model.

    Parameters
    ----------
    activation : {"relu", "tanh", "logistic"}
        The activation (an ``eltwise_`` prefix is accepted).
    direction : str
        As for :class:`LSTM`.
    src_layer_desc, src_iter_desc : MemoryDesc
        As for :class:`GRU` (``src_iter_desc`` may be None).
    weights_layer_desc, weights_iter_desc : MemoryDesc
        s8 ``(L, D, C, 1, H)`` and ``(L, D, H, 1, H)``.
    bias_desc : MemoryDesc or None
        f32 ``(L, D, 1, H)``.
    dst_layer_desc, dst_iter_desc : MemoryDesc or None
        As for :class:`GRU`.
    attr : PrimitiveAttr, optional
        The quantization, as for :class:`LSTM`.

    Attributes
    ----------
    impl_info : str
        ``<level>:rnn_fused_cell``.

    Raises
    ------
    InvalidArguments
        An unknown activation or direction, dims that do not fit together, missing or
        mixed quantization parameters.
    Unimplemented
        A data type, argument or mask outside the support table.

    See Also
    --------
    LSTM

    Notes
    -----
    Data keys of ``execute``: as :class:`GRU`.  relu is ``v > 0 ? v : v * 0``.

    Examples
    --------
    >>> import numpy as np, dnnq
    >>> md = dnnq.MemoryDesc
    >>> attr = dnnq.PrimitiveAttr().set_rnn_data_qparams(100.0, 0.0)
    >>> rnn = dnnq.VanillaRNN("relu", "unidirectional_left2right", md((2, 1, 2), "u8"), None,
    ...                       md((1, 1, 2, 1, 2), "s8"), md((1, 1, 2, 1, 2), "s8"),
    ...                       md((1, 1, 1, 2), "f32"), md((2, 1, 2), "u8"), None, attr=attr)
    >>> w = np.ones((1, 1, 2, 1, 2), np.int8)
    >>> out = rnn.execute({dnnq.DNNL_ARG_SRC_LAYER: np.full((2, 1, 2), 10, np.uint8),
    ...                    dnnq.DNNL_ARG_WEIGHTS_LAYER: w, dnnq.DNNL_ARG_WEIGHTS_ITER: 0 * w,
    ...                    dnnq.DNNL_ARG_BIAS: np.zeros((1, 1, 1, 2), np.float32)})
    >>> out[dnnq.DNNL_ARG_DST_LAYER][:, 0].tolist()     # h = relu(0.1 + 0.1) -> 20
    [[20, 20], [20, 20]]
    """

    _cell = "vanilla"
    _name = "VanillaRNN"

    def __init__(self, activation, direction, src_layer_desc, src_iter_desc, weights_layer_desc,
                 weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, attr=None):
        act = activation[len("eltwise_"):] if isinstance(activation, str) and \
            activation.startswith("eltwise_") else activation
        if act not in ACTIVATIONS:
            raise InvalidArguments(f"VanillaRNN: activation got {activation!r}; expected one "
                                   "of relu, tanh, logistic")
        self._setup(direction, act, src_layer_desc, src_iter_desc, None, weights_layer_desc,
                    weights_iter_desc, bias_desc, dst_layer_desc, dst_iter_desc, None, attr)
