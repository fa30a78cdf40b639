"""dnnq.onnx: run ONNX models (f32, QDQ, QOperator) on dnnq's primitives.

``sess = dnnq.onnx.InferenceSession("model.onnx")``; ``sess.run(None, {"x": x})``;
``sess.plan()`` lists the executed steps. Needs the ``onnx`` package (``pip install
'dnnq[onnx]'``); ONNX Runtime is never needed. See docs/onnx.md.
"""
from dnnq.onnx.quantize import quantize
from dnnq.onnx.session import InferenceSession

__all__ = ["InferenceSession", "quantize"]
