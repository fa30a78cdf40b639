"""A small ONNX graph builder for the generated-model tests (test_onnx_patterns.py,
test_onnx_warm_runs.py)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def weights(*shape, scale=0.3):
    """Random f32 weights (normal, times ``scale``)."""
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


class Builder:
    def __init__(self):
        self.nodes, self.inits = [], []
        self.n = 0

    def const(self, arr):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(self, op, inputs, **attrs):
        self.n += 1
        out = f"t{self.n}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{self.n}", **attrs))
        return out

    def conv(self, x, cin, cout, k=3, group=1, stride=1, bias=True, **kw):
        w = self.const(weights(cout, cin // group, k, k))
        ins = [x, w] + ([self.const(weights(cout, scale=0.1))] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k, k], pads=[k // 2] * 4, group=group,
                       strides=[stride, stride], **kw)

    def model(self, x_shape, out, opset=13):
        g = helper.make_graph(
            self.nodes, "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m
