"""benchdnn's problem descriptors and attribute mini-language, parsed into plain Python.

    matmul  [B..x]MxK:[B..x]KxN[:...][_n"NAME"]        128x768:768x3072, 12x128x64:12x64x128
    ip      mbXicX[ihX[iwX]]ocX[_n"NAME"]              mb128ic768oc3072
    --attr-scales=src:common:0.25+wei:per_oc+dst:common:2
    --attr-zero-points=src:common:3+dst:common:-1
    --attr-post-ops=sum:1.5:2+relu+linear:2:-1+add:f32:per_oc
"""
import re

from dnnq.errors import InvalidArguments

_NAME = re.compile(r'_?n"[^"]*"$|_?n[A-Za-z0-9_:.*-]+$')


def strip_name(desc):
    m = _NAME.search(desc)
    return (desc[:m.start()], m.group(0).lstrip("_")[1:].strip('"')) if m else (desc, "")


def parse_matmul(desc):
    """'[B..x]MxK:[B..x]KxN' -> (src_dims, wei_dims, name)."""
    body, name = strip_name(desc.strip())
    parts = body.split(":")
    if len(parts) < 2:
        raise InvalidArguments(f"matmul descriptor: got {desc!r}; expected MxK:KxN")
    try:
        src, wei = ([int(x) for x in p.split("x")] for p in parts[:2])
    except ValueError:
        raise InvalidArguments(f"matmul descriptor: got {desc!r}; expected MxK:KxN") from None
    if len(src) < 2 or len(src) != len(wei) or src[-1] != wei[-2] or len(src) > 3:
        raise InvalidArguments(f"matmul descriptor: got {desc!r}; expected [B x]MxK:[B x]KxN "
                               "with matching K (2-D or 3-D)")
    return tuple(src), tuple(wei), name


def parse_ip(desc):
    """'mbXicX[idX][ihX][iwX]ocX' -> (src_dims, wei_dims, name)."""
    body, name = strip_name(desc.strip())
    vals = dict((k, int(v)) for k, v in re.findall(r"(mb|ic|id|ih|iw|oc)(\d+)", body))
    if "ic" not in vals or "oc" not in vals:
        raise InvalidArguments(f"ip descriptor: got {desc!r}; expected mbXicXocX")
    mb = vals.get("mb", 2)
    spatial = [vals[k] for k in ("id", "ih", "iw") if k in vals]
    if "ih" in vals and "iw" not in vals:
        spatial.append(vals["ih"])
    return (mb, vals["ic"], *spatial), (vals["oc"], vals["ic"], *spatial), name


_ARGS = {"src": "src", "src0": "src", "wei": "wei", "dst": "dst"}


def parse_quant(text, what):
    """'src:common:0.25+wei:per_oc' -> {arg: (mask_name, value or None)}."""
    out = {}
    if not text:
        return out
    for item in text.split("+"):
        f = item.split(":")
        if len(f) < 2 or f[0] not in _ARGS:
            raise InvalidArguments(f"--attr-{what}: got {item!r}; expected ARG:MASK[:VALUE] with "
                                   "ARG src, wei or dst")
        value = float(f[2]) if len(f) > 2 and f[2] else None
        if f[1] == "common" and value is None:
            value = 1.0 if what == "scales" else 0
        out[_ARGS[f[0]]] = (f[1], value)
    return out


def parse_post_ops(text):
    """'sum:1.5:2+relu:0.5+add:f32:per_oc' -> list of ('sum', scale, zp) /
    ('eltwise', alg, alpha, beta) / ('binary', alg, dt, mask_name)."""
    ops = []
    if not text:
        return ops
    binary = {"add", "sub", "mul", "div", "min", "max", "ge", "gt", "le", "lt", "eq", "ne"}
    for item in text.split("+"):
        f = item.split(":")
        kind = f[0].lower()
        if kind == "sum":
            ops.append(("sum", float(f[1]) if len(f) > 1 else 1.0, int(f[2]) if len(f) > 2 else 0))
        elif kind in binary:
            ops.append(("binary", kind, f[1] if len(f) > 1 else "f32",
                        f[2] if len(f) > 2 else "common"))
        else:
            ops.append(("eltwise", kind, float(f[1]) if len(f) > 1 else 0.0,
                        float(f[2]) if len(f) > 2 else 0.0))
    return ops
