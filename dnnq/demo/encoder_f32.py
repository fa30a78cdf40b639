"""all-MiniLM-L6-v2 (BERT: embeddings, 6 encoder layers, mean pooling, L2 normalisation) in
float32 numpy (its BLAS for the matmuls).  The pieces that are not linear layers (embeddings, LayerNorm, attention with
its softmax, pooling) are shared with the int8 encoder, so the two differ only in their
linear layers."""
import numpy as np

from dnnq.demo._parallel import split_rows

_F32 = np.float32


def layer_norm(x, gamma, beta, eps, out=None):
    """LayerNorm over the last axis of 2-D x, in float32, into ``out`` or a new array; the
    rows are split over the threads (:mod:`dnnq.demo._parallel`)."""
    if out is None:
        out = np.empty_like(x)
    split_rows(lambda lo, hi: _layer_norm_rows(x[lo:hi], gamma, beta, eps, out[lo:hi]),
               x.shape[0], grain=64)
    return out


def _layer_norm_rows(x, gamma, beta, eps, xc):
    mu = x.mean(axis=-1, keepdims=True, dtype=_F32)
    np.subtract(x, mu, out=xc)
    var = np.einsum("...i,...i->...", xc, xc)[..., None]
    var *= _F32(1.0 / x.shape[-1])
    var += _F32(eps)
    np.sqrt(var, out=var)
    xc /= var
    xc *= gamma
    xc += beta


def embed(w, ids):
    """Word + position + token-type embeddings and their LayerNorm: (B*S, hidden) float32."""
    b, s = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids.reshape(-1)].reshape(b, s, -1)
    x += w["embeddings.position_embeddings.weight"][:s]
    x += w["embeddings.token_type_embeddings.weight"][0]
    return layer_norm(x.reshape(b * s, -1), w["embeddings.LayerNorm.weight"],
                      w["embeddings.LayerNorm.bias"], w.config.eps)


def attention(qkv, mask_bias, heads):
    """Scaled dot-product attention of every head, in float32 (sentences split over the
    threads); see :func:`_attention`."""
    b, s = mask_bias.shape
    out = np.empty((b * s, qkv.shape[1] // 3), _F32)

    def part(lo, hi):
        out[lo * s:hi * s] = _attention(qkv[lo * s:hi * s], mask_bias[lo:hi], heads)
    split_rows(part, b, grain=max(1, 64 // s))
    return out


def _attention(qkv, mask_bias, heads):
    """Scaled dot-product attention of every head, in float32.

    qkv: (B*S, 3*hidden) -- query, key and value projections side by side; mask_bias:
    (B, S) with 0 for tokens and the most negative float32 for padding.  Returns the context
    (B*S, hidden).  The softmax is exp(min(score, 80)) normalised after the product with V:
    the same as subtracting the row maximum, without numpy's slow reductions over rows of a
    few elements (BERT's scores stay far below 80; the clip only guards exp against
    overflow, and padding's exp is exactly 0); the sums come from a product with a vector of
    ones (BLAS, not numpy's short-row reduction)."""
    b, s = mask_bias.shape
    hidden = qkv.shape[1] // 3
    d = hidden // heads
    # views, no copies: each head's (S, D) matrix has unit stride along D and qkv's row
    # stride along S, which BLAS takes as it is (a transposed copy in and out cost a third
    # of the attention)
    t = qkv.reshape(b, s, 3, heads, d)
    q = t[:, :, 0].transpose(0, 2, 1, 3)                          # (B, H, S, D)
    k_t = t[:, :, 1].transpose(0, 2, 3, 1)                        # (B, H, D, S)
    v = t[:, :, 2].transpose(0, 2, 1, 3)                          # (B, H, S, D)
    scores = np.matmul(q, k_t)                                    # (B, H, S, S)
    scores *= _F32(1.0 / np.sqrt(d))
    scores += mask_bias[:, None, None, :]
    np.minimum(scores, _F32(80.0), out=scores)
    np.exp(scores, out=scores)
    inv_sum = 1.0 / (scores @ np.ones(s, _F32))                   # (B, H, S)
    ctx = np.empty((b, s, heads, d), _F32)
    np.matmul(scores, v, out=ctx.transpose(0, 2, 1, 3))           # written in (B, S, H, D)
    ctx *= inv_sum.transpose(0, 2, 1)[..., None]
    return ctx.reshape(b * s, hidden)


def mask_bias(mask):
    """Additive attention mask (B, S): 0 for tokens, the most negative float32 for padding,
    which then gets exactly zero weight after the softmax (as in transformers' BertModel)."""
    return np.where(mask > 0, _F32(0.0), _F32(np.finfo(np.float32).min)).astype(_F32)


def mean_pool_normalize(x, mask):
    """Mean of the token vectors over the real tokens, then L2-normalised: (B, hidden)."""
    b, s = mask.shape
    m = mask.astype(_F32)
    summed = np.einsum("bsh,bs->bh", x.reshape(b, s, -1), m)
    summed /= np.maximum(m.sum(axis=1, keepdims=True), _F32(1e-9))
    norm = np.linalg.norm(summed, axis=1, keepdims=True)
    return summed / np.maximum(norm, _F32(1e-12))


# erf after Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): numpy has no erf.  With
# e = 1 - erf(|x|/sqrt 2), GELU(x) = x (1 + erf(x/sqrt 2)) / 2 = max(x, 0) - |x| e / 2; the
# halving is folded into the polynomial's coefficients.
_P = _F32(0.3275911 / np.sqrt(2.0))
_A = [_F32(0.5 * c) for c in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]
_GELU_ROWS = 32  # rows per chunk: the temporaries stay in cache and are not page-faulted anew


def _gelu_rows(x, out):
    a = np.abs(x)
    t = a * _P
    t += _F32(1.0)
    np.reciprocal(t, out=t)
    poly = t * _A[4]
    for c in (_A[3], _A[2], _A[1], _A[0]):
        poly += c
        poly *= t
    e = np.multiply(a, a)
    e *= _F32(-0.5)
    np.exp(e, out=e)
    poly *= e
    poly *= a
    np.maximum(x, _F32(0.0), out=out)
    out -= poly


def gelu_erf(x, out=None):
    """BERT's GELU ``x (1 + erf(x / sqrt 2)) / 2`` of a 2-D float32 array (into ``out`` or a
    new array; ``out`` may be ``x``); within 3e-7 of the exact value."""
    if out is None:
        out = np.empty_like(x)

    def part(lo, hi):
        for i in range(lo * _GELU_ROWS, min(hi * _GELU_ROWS, x.shape[0]), _GELU_ROWS):
            _gelu_rows(x[i:i + _GELU_ROWS], out[i:i + _GELU_ROWS])
    split_rows(part, -(-x.shape[0] // _GELU_ROWS))
    return out


class Float32Encoder:
    """The float32 numpy encoder.  ``encode(ids, mask)`` returns L2-normalised sentence
    embeddings (B, hidden)."""

    name = "float32 numpy"

    def __init__(self, weights):
        self.w = weights
        c = weights.config
        self.config = c
        self.layers = []
        for i in range(c.layers):
            lw = lambda n: weights.layer(i, n)  # noqa: E731
            wqkv = np.concatenate([lw("attention.self.query.weight"), lw("attention.self.key.weight"),
                                   lw("attention.self.value.weight")], axis=0)
            bqkv = np.concatenate([lw("attention.self.query.bias"), lw("attention.self.key.bias"),
                                   lw("attention.self.value.bias")])
            self.layers.append(dict(
                # (in, out) contiguous: x @ W is one sgemm without a transposed operand
                wqkv=np.ascontiguousarray(wqkv.T), bqkv=bqkv,
                wo=np.ascontiguousarray(lw("attention.output.dense.weight").T),
                bo=lw("attention.output.dense.bias"),
                ln1=(lw("attention.output.LayerNorm.weight"), lw("attention.output.LayerNorm.bias")),
                w1=np.ascontiguousarray(lw("intermediate.dense.weight").T),
                b1=lw("intermediate.dense.bias"),
                w2=np.ascontiguousarray(lw("output.dense.weight").T), b2=lw("output.dense.bias"),
                ln2=(lw("output.LayerNorm.weight"), lw("output.LayerNorm.bias"))))

    def hidden_states(self, ids, mask, n_layers=None, record=None):
        """The last hidden state (B*S, hidden) after ``n_layers`` layers (all by default).
        ``record``: a dict that receives the input of every linear layer, keyed by
        (layer, "qkv" | "attn_out" | "ffn_in" | "ffn_out"), and the feed-forward pre-activation
        as (layer, "ffn_pre") (the int8 encoder's calibration)."""
        c = self.config
        x = embed(self.w, ids)
        mb = mask_bias(mask)
        rec = record if record is not None else {}
        for i, p in enumerate(self.layers[:n_layers]):
            rec[i, "qkv"] = x
            qkv = x @ p["wqkv"]
            qkv += p["bqkv"]
            ctx = rec[i, "attn_out"] = attention(qkv, mb, c.heads)
            h = ctx @ p["wo"]
            h += p["bo"]
            h += x
            x = rec[i, "ffn_in"] = layer_norm(h, *p["ln1"], c.eps)
            f = x @ p["w1"]
            f += p["b1"]
            rec[i, "ffn_pre"] = f.copy() if record is not None else None
            f = rec[i, "ffn_out"] = gelu_erf(f, out=f)
            h = f @ p["w2"]
            h += p["b2"]
            h += x
            x = layer_norm(h, *p["ln2"], c.eps)
        return x

    def encode(self, ids, mask, n_layers=None):
        """L2-normalised mean-pooled embeddings (B, hidden)."""
        return mean_pool_normalize(self.hidden_states(ids, mask, n_layers), mask)
