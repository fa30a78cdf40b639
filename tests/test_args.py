"""Argument IDs: the SPEC section 3 values, decode / encode / name / oneDNN 3.x translation."""
import numpy as np
import pytest

from dnnq import args as A
from dnnq.errors import InvalidArguments

SPEC_VALUES = {
    "DNNL_ARG_SRC": 1, "DNNL_ARG_SRC_0": 1, "DNNL_ARG_SRC_LAYER": 1,
    "DNNL_ARG_SRC_1": 2, "DNNL_ARG_SRC_ITER": 2,
    "DNNL_ARG_SRC_2": 3, "DNNL_ARG_SRC_ITER_C": 3,
    "DNNL_ARG_DST": 17, "DNNL_ARG_DST_0": 17, "DNNL_ARG_DST_LAYER": 17,
    "DNNL_ARG_DST_1": 18, "DNNL_ARG_DST_ITER": 18,
    "DNNL_ARG_DST_2": 19, "DNNL_ARG_DST_ITER_C": 19,
    "DNNL_ARG_WEIGHTS": 33, "DNNL_ARG_WEIGHTS_0": 33, "DNNL_ARG_WEIGHTS_LAYER": 33,
    "DNNL_ARG_WEIGHTS_1": 34, "DNNL_ARG_WEIGHTS_ITER": 34,
    "DNNL_ARG_BIAS": 41, "DNNL_ARG_SCALE": 512, "DNNL_ARG_MULTIPLE_SRC": 1024,
    "DNNL_ARG_MULTIPLE_DST": 2048, "DNNL_ARG_ATTR_ZERO_POINTS": 4096,
    "DNNL_ARG_ATTR_POST_OP_DW": 8192, "DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE": 16384,
}


@pytest.mark.parametrize("const,value", sorted(SPEC_VALUES.items()))
def test_spec_values(const, value):
    assert getattr(A, const) == value
    assert type(getattr(A, const)) is int


def test_multiple_post_op_function():
    for idx in range(31):
        assert A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) == 16384 * (idx + 1)
    assert A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(np.int64(2)) == 3 * 16384
    assert A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC_1 == 16898


@pytest.mark.parametrize("idx", [31, 32, -1, 1.0, "0", None, True])
def test_multiple_post_op_invalid(idx):
    with pytest.raises(InvalidArguments, match="idx"):
        A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)


def test_spec_examples_decode_and_name():
    assert A.name(A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC) == "scale.src"
    assert A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC == 513
    assert A.name(A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST) == "zero_point.dst"
    assert A.name(16898) == "post_op[0].scale.src_1"
    assert A.name(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(4) | A.DNNL_ARG_SRC_1) == "post_op[4].src_1"
    assert A.name(A.DNNL_ARG_SCALE | (A.DNNL_ARG_MULTIPLE_SRC + 3)) == "scale.multiple_src[3]"
    assert A.name(A.DNNL_ARG_SCALE | A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_WEIGHTS) \
        == "dw.scale.weights"
    assert A.name(A.DNNL_ARG_SRC_LAYER) == "src"
    assert A.name(A.DNNL_ARG_BIAS) == "bias"
    p = A.decode(16898)
    assert p == A.ArgParts(base=A.DNNL_ARG_SRC_1, scale=True, post_op=0)
    p = A.decode(A.DNNL_ARG_SCALE | (A.DNNL_ARG_MULTIPLE_SRC + 7))
    assert p.base is None and p.multiple_src == 7 and p.scale and p.multiple_dst is None
    p = A.decode(A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_BIAS)
    assert p.dw and p.base == 41 and not p.scale


def test_argparts_frozen():
    p = A.decode(1)
    with pytest.raises(Exception):
        p.scale = True


VALID = A.all_valid_args()


def test_all_valid_args_content():
    assert VALID == sorted(set(VALID))
    # 11 plain + 10 scales + 10 zero points; 512*3 per multiple kind; 31*3 post-op (src_1,
    # its scales, a select's src_2); 5 dw
    assert len(VALID) == 31 + 2 * 512 * 3 + 93 + 5
    for v in (1, 2, 3, 17, 18, 19, 33, 34, 35, 36, 41, 513, 4096 | 17, 16898, 16384 | 3, 1024,
              1024 + 511, 2048 + 511, 8192 | 33, 8192 | 512 | 33, 8192 | 41):
        assert v in VALID
    for v in (512 | 41, 4096 | 41, 4096 | 512 | 1, 16384 | 1, 16384 | 4096 | 2, 8192 | 1,
              8192 | 4096 | 33, 8192 | 16384 | 2):
        assert v not in VALID


def test_round_trips_over_all_valid_args():
    names = set()
    for a in VALID:
        p = A.decode(a)
        assert A.encode(p) == a
        n = A.name(a)
        names.add(n)
        assert A.from_name(n) == a
        v3 = A.to_onednn_v3(a)
        assert A.from_onednn_v3(v3) == a
        assert A.decode(A.from_onednn_v3(v3)) == p
    assert len(names) == len(VALID)


def test_v3_translation_fields():
    assert A.to_onednn_v3(A.DNNL_ARG_SCALE | A.DNNL_ARG_SRC) == 4096 | 1
    assert A.to_onednn_v3(A.DNNL_ARG_ATTR_ZERO_POINTS | A.DNNL_ARG_DST) == 8192 | 17
    assert A.to_onednn_v3(16898) == 32768 | 4096 | 2
    assert A.to_onednn_v3(A.DNNL_ARG_ATTR_MULTIPLE_POST_OP(30) | A.DNNL_ARG_SRC_1) \
        == 32768 * 31 | 2
    assert A.to_onednn_v3(A.DNNL_ARG_ATTR_POST_OP_DW | A.DNNL_ARG_SCALE | A.DNNL_ARG_WEIGHTS) \
        == 16384 | 4096 | 33
    for plain in (1, 2, 3, 17, 18, 19, 33, 34, 41, 1024 + 5, 2048 + 9):
        assert A.to_onednn_v3(plain) == plain
        assert A.from_onednn_v3(plain) == plain


@pytest.mark.parametrize("bad", [
    512 | 41,                      # scale of bias
    4096 | 41,                     # zero point of bias
    4096 | 512 | 1,                # scale of a zero point
    0, 512, 4096, 16384,           # no base
    31, 4, 16, 37, 40, 42, 100,    # not a plain argument
    1024 | 2048 | 1,               # both multiples
    -1, -513,                      # negative
    1 << 19, (1 << 19) | 1, 1 << 30,  # garbage bits (post-op idx 31 and beyond)
    16384 | 1, 16384 | 33,         # post-op on something other than src_1 / src_2
    16384 | 512 | 3,               # scales of a select post-op's src_2
    16384 | 4096 | 3,              # zero point of a select post-op's src_2
    16384 | 4096 | 2,              # zero point of a post-op src_1
    8192 | 1, 8192 | 2,            # dw on src
    8192 | 4096 | 33,              # dw zero point
    8192 | 16384 | 2,              # dw and post-op
    8192 | 512 | 41,               # dw bias scale
])
def test_invalid_ids(bad):
    with pytest.raises(InvalidArguments) as e:
        A.decode(bad)
    assert str(bad) in str(e.value)
    with pytest.raises(InvalidArguments):
        A.name(bad)
    with pytest.raises(InvalidArguments):
        A.to_onednn_v3(bad)


@pytest.mark.parametrize("bad", [True, False, 1.0, "1", None, [1], np.float32(1)])
def test_non_int_ids(bad):
    with pytest.raises(InvalidArguments, match="type"):
        A.decode(bad)


def test_numpy_int_ids_accepted():
    assert A.decode(np.int32(513)) == A.decode(513)
    assert A.name(np.uint16(17)) == "dst"


@pytest.mark.parametrize("bad_v3", [
    512 | 1,                 # 512 is no prefix in oneDNN 3.x
    1024 + 600,              # input index dnnq cannot express
    4096 | 8192 | 1,         # scale of a zero point
    1 << 20,                 # beyond the post-op field
    4096 | 41,
])
def test_from_v3_invalid(bad_v3):
    with pytest.raises(InvalidArguments):
        A.from_onednn_v3(bad_v3)


@pytest.mark.parametrize("parts", [
    A.ArgParts(),
    A.ArgParts(base=1, multiple_src=0),
    A.ArgParts(multiple_src=1, multiple_dst=1),
    A.ArgParts(base=5),
    A.ArgParts(base=True),
    A.ArgParts(multiple_src=512),
    A.ArgParts(multiple_src=-1),
    A.ArgParts(base=2, post_op=31),
    A.ArgParts(base=2, post_op=-1),
    A.ArgParts(base=1, scale=True, zero_point=True),
    A.ArgParts(base=41, scale=True),
    A.ArgParts(base=2, post_op=0, dw=True),
    A.ArgParts(base=33, dw=True, zero_point=True),
    A.ArgParts(base=1, scale=1),
])
def test_encode_invalid(parts):
    with pytest.raises(InvalidArguments):
        A.encode(parts)


def test_encode_rejects_non_parts():
    with pytest.raises(InvalidArguments):
        A.encode(513)


@pytest.mark.parametrize("text", ["", "source", "scale", "scale.scale.src", "post_op[x].src_1",
                                  "zero_point.bias", "multiple_src[600]", "dw.src", 5])
def test_from_name_invalid(text):
    with pytest.raises(InvalidArguments):
        A.from_name(text)


def test_error_message_mentions_reason():
    with pytest.raises(InvalidArguments, match="bias"):
        A.decode(512 | 41)
    with pytest.raises(InvalidArguments, match="unknown bits"):
        A.decode(1 << 25)
