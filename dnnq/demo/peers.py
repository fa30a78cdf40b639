"""The engines the demo compares dnnq with, each optional (used when its package is installed):

* PyTorch float32 -- the encoder written with ``torch.nn`` modules from the same weights;
* PyTorch dynamic int8 -- that module through ``torch.ao.quantization.quantize_dynamic``
  (every nn.Linear: s8 weights per tensor, u8 activations quantized per batch, fbgemm/x86);
* ONNX Runtime float32 and dynamic int8 -- an ONNX graph of the 6 encoder layers built here
  from the weights with ``onnx.helper`` (no exporter, no download), the int8 one through
  ``onnxruntime.quantization.quantize_dynamic`` (per-channel s8 weights, MatMulInteger).

Every engine maps (ids, mask) to L2-normalised embeddings; for ONNX Runtime the embedding
lookup and the mean pooling run in numpy around the graph (both are a small part of the
time).
"""
import warnings

import numpy as np

from dnnq.demo.encoder_f32 import embed, mean_pool_normalize


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def onnxruntime_available():
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxruntime.quantization  # noqa: F401
        return True
    except ImportError:
        return False


def _torch_model(weights):
    import torch
    from torch import nn
    import torch.nn.functional as F

    c = weights.config

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(c.hidden, c.hidden)
            self.key = nn.Linear(c.hidden, c.hidden)
            self.value = nn.Linear(c.hidden, c.hidden)
            self.attn_out = nn.Linear(c.hidden, c.hidden)
            self.ln1 = nn.LayerNorm(c.hidden, eps=c.eps)
            self.ffn_in = nn.Linear(c.hidden, c.intermediate)
            self.ffn_out = nn.Linear(c.intermediate, c.hidden)
            self.ln2 = nn.LayerNorm(c.hidden, eps=c.eps)

        def forward(self, x, mask_bias):
            b, s, _ = x.shape

            def heads(t):
                return t.view(b, s, c.heads, c.head_dim).transpose(1, 2)
            q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
            scores = q @ k.transpose(-1, -2) * (1.0 / c.head_dim ** 0.5) + mask_bias
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, c.hidden)
            x = self.ln1(x + self.attn_out(ctx))
            return self.ln2(x + self.ffn_out(F.gelu(self.ffn_in(x))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(*weights["embeddings.word_embeddings.weight"].shape)
            self.pos = nn.Embedding(*weights["embeddings.position_embeddings.weight"].shape)
            self.token_type = nn.Embedding(*weights["embeddings.token_type_embeddings.weight"].shape)
            self.ln = nn.LayerNorm(c.hidden, eps=c.eps)
            self.layers = nn.ModuleList(Layer() for _ in range(c.layers))

        def forward(self, ids, mask):
            s = ids.shape[1]
            x = self.ln(self.word(ids) + self.pos.weight[:s] + self.token_type.weight[0])
            mb = torch.zeros(mask.shape, dtype=torch.float32)
            mb = mb.masked_fill(mask == 0, torch.finfo(torch.float32).min)[:, None, None, :]
            for layer in self.layers:
                x = layer(x, mb)
            m = mask.to(torch.float32)[..., None]
            pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, p=2, dim=1)

    model = Encoder()
    sd = {"word.weight": "embeddings.word_embeddings.weight",
          "pos.weight": "embeddings.position_embeddings.weight",
          "token_type.weight": "embeddings.token_type_embeddings.weight",
          "ln.weight": "embeddings.LayerNorm.weight", "ln.bias": "embeddings.LayerNorm.bias"}
    names = {"query": "attention.self.query", "key": "attention.self.key",
             "value": "attention.self.value", "attn_out": "attention.output.dense",
             "ln1": "attention.output.LayerNorm", "ffn_in": "intermediate.dense",
             "ffn_out": "output.dense", "ln2": "output.LayerNorm"}
    for i in range(c.layers):
        for mine, theirs in names.items():
            for p in ("weight", "bias"):
                sd[f"layers.{i}.{mine}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    model.load_state_dict({k: torch.from_numpy(weights[v].copy()) for k, v in sd.items()})
    return model.eval()


class TorchEncoder:
    """PyTorch float32, or with ``int8=True`` its dynamic int8 quantization of every Linear."""

    def __init__(self, weights, int8=False):
        import torch
        self._torch = torch
        model = _torch_model(weights)
        if int8:
            with warnings.catch_warnings():   # PyTorch 2.13 announces the API's deprecation
                warnings.simplefilter("ignore")
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear},
                                                               dtype=torch.qint8)
        self.model = model
        self.name = "PyTorch dynamic int8" if int8 else "PyTorch float32"

    def encode(self, ids, mask):
        torch = self._torch
        with torch.inference_mode():
            return self.model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()


def _onnx_graph(weights):
    """The 6 encoder layers as an ONNX model: inputs x (B, S, hidden) float32 -- the embedding
    output -- and mask_bias (B, 1, 1, S); output the last hidden state (B, S, hidden)."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto

    c = weights.config
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op, inputs, out, **kw):
        nodes.append(helper.make_node(op, inputs, [out], **kw))
        return out

    const("shape_heads", np.array([0, 0, c.heads, c.head_dim], np.int64))
    const("shape_hidden", np.array([0, 0, c.hidden], np.int64))
    const("inv_sqrt_d", np.array(1.0 / np.sqrt(c.head_dim), np.float32))
    const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), np.float32))
    const("one", np.array(1.0, np.float32))
    const("half", np.array(0.5, np.float32))
    x = "x"
    for i in range(c.layers):
        p = f"l{i}_"

        def linear(src, name, tag):
            w = const(p + tag + "_w", weights.layer(i, name + ".weight").T)   # (in, out)
            b = const(p + tag + "_b", weights.layer(i, name + ".bias"))
            return node("Add", [node("MatMul", [src, w], p + tag + "_mm"), b], p + tag)

        def heads(t, perm):
            return node("Transpose", [node("Reshape", [t, "shape_heads"], t + "_r")], t + "_t",
                        perm=perm)
        q = heads(linear(x, "attention.self.query", "q"), [0, 2, 1, 3])
        k = heads(linear(x, "attention.self.key", "k"), [0, 2, 3, 1])
        v = heads(linear(x, "attention.self.value", "v"), [0, 2, 1, 3])
        s = node("Add", [node("Mul", [node("MatMul", [q, k], p + "qk"), "inv_sqrt_d"], p + "qks"),
                         "mask_bias"], p + "scores")
        ctx = node("MatMul", [node("Softmax", [s], p + "probs", axis=-1), v], p + "ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], p + "ctx_t", perm=[0, 2, 1, 3]),
                               "shape_hidden"], p + "ctx_r")

        def ln(src, name, tag):
            g = const(p + tag + "_g", weights.layer(i, name + ".weight"))
            b = const(p + tag + "_beta", weights.layer(i, name + ".bias"))
            return node("LayerNormalization", [src, g, b], p + tag, axis=-1, epsilon=c.eps)
        h = ln(node("Add", [x, linear(ctx, "attention.output.dense", "o")], p + "res1"),
               "attention.output.LayerNorm", "ln1")
        f = linear(h, "intermediate.dense", "f1")
        erf = node("Erf", [node("Mul", [f, "inv_sqrt2"], p + "f1s")], p + "erf")
        g = node("Mul", [node("Mul", [f, node("Add", [erf, "one"], p + "erf1")], p + "fg"), "half"],
                 p + "gelu")
        x = ln(node("Add", [h, linear(g, "output.dense", "f2")], p + "res2"),
               "output.LayerNorm", "ln2")
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(
        nodes, "minilm_encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", c.hidden]),
         helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["B", 1, 1, "S"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", c.hidden])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class OnnxRuntimeEncoder:
    """ONNX Runtime on the graph of :func:`_onnx_graph`, float32 or dynamically quantized."""

    def __init__(self, weights, threads, int8=False, workdir=None):
        import os
        import tempfile
        import onnx
        import onnxruntime as ort
        self.w = weights
        self.name = "ONNX Runtime dynamic int8" if int8 else "ONNX Runtime float32"
        model = _onnx_graph(weights)
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            path = os.path.join(tmp, "encoder.onnx")
            onnx.save(model, path)
            if int8:
                from onnxruntime.quantization import quantize_dynamic, QuantType
                qpath = os.path.join(tmp, "encoder_int8.onnx")
                import logging
                logging.getLogger().setLevel(logging.ERROR)   # its advice on pre-processing
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    quantize_dynamic(path, qpath, weight_type=QuantType.QInt8, per_channel=True)
                path = qpath
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            with open(path, "rb") as f:
                self.session = ort.InferenceSession(f.read(), opts,
                                                    providers=["CPUExecutionProvider"])

    def encode(self, ids, mask):
        b, s = ids.shape
        x = embed(self.w, ids).reshape(b, s, -1)
        mb = np.where(mask > 0, 0.0, np.finfo(np.float32).min).astype(np.float32)
        y = self.session.run(["y"], {"x": x, "mask_bias": mb.reshape(b, 1, 1, s)})[0]
        return mean_pool_normalize(y.reshape(b * s, -1), mask)
