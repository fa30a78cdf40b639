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
    if "ic" not in vals or "oc" not in vals or not re.fullmatch(r"((mb|ic|id|ih|iw|oc)\d+_?)+",
                                                                 body):
        raise InvalidArguments(f"ip descriptor: got {desc!r}; expected mbXicXocX")
    mb = vals.get("mb", 2)
    spatial = [vals[k] for k in ("id", "ih", "iw") if k in vals]
    if "ih" in vals and "iw" not in vals:
        spatial.append(vals["ih"])
    return (mb, vals["ic"], *spatial), (vals["oc"], vals["ic"], *spatial), name


_ARGS = {"src": "src", "src0": "src", "wei": "wei", "dst": "dst"}
_MASK = re.compile(r"common|per_oc|per_tensor|per_dim_[0-9]+|[0-9]+")


def parse_quant(text, what):
    """'src:common:0.25+wei:per_oc' -> {arg: (mask_name, value or None)}; ``what`` is
    ``"scales"`` (float values, default 1) or ``"zero-points"`` (integer values, default 0).
    A non-common mask takes no value (the driver generates them, as benchdnn)."""
    out = {}
    if not text:
        return out
    for item in text.split("+"):
        f = item.split(":")
        if len(f) < 2 or f[0] not in _ARGS or not _MASK.fullmatch(f[1]) or len(f) > 3:
            raise InvalidArguments(f"--attr-{what}: got {item!r}; expected ARG:MASK[:VALUE] with "
                                   "ARG src, wei or dst and MASK common, per_oc, per_tensor, "
                                   "per_dim_N or an integer mask")
        value = None
        if len(f) > 2 and f[2]:
            if f[1] != "common":
                raise InvalidArguments(f"--attr-{what}: got {item!r}; a {f[1]} mask takes no "
                                       "value (the driver generates them); expected "
                                       f"{f[0]}:{f[1]} or {f[0]}:common:VALUE")
            try:
                value = float(f[2]) if what == "scales" else int(f[2])
            except ValueError:
                raise InvalidArguments(f"--attr-{what}: got {item!r}; expected "
                                       f"{'a number' if what == 'scales' else 'an integer'} "
                                       "as the value") from None
        if f[1] == "common" and value is None:
            value = 1.0 if what == "scales" else 0
        if _ARGS[f[0]] in out:
            raise InvalidArguments(f"--attr-{what}: {f[0]} given twice in {text!r}")
        out[_ARGS[f[0]]] = (f[1], value)
    return out


def mask_of(name, per_oc):
    """A mask name of --attr-scales / --attr-zero-points / a binary post-op as an int:
    ``common`` 0, ``per_oc`` the argument's ``per_oc`` mask, ``per_dim_01`` 3, ``'6'`` 6;
    ``per_tensor`` is left to the caller (None)."""
    if name == "common":
        return 0
    if name == "per_oc":
        return per_oc
    if name == "per_tensor":
        return None
    if name.startswith("per_dim_"):
        return sum(1 << int(c) for c in name[len("per_dim_"):])
    return int(name)


def _number(item, text, kind):
    try:
        return kind(text)
    except ValueError:
        raise InvalidArguments(f"--attr-post-ops: got {item!r}; {text!r} is not "
                               f"{'a number' if kind is float else 'an integer'}") from None


def parse_post_ops(text):
    """'sum:1.5:2+relu:0.5+add:f32:per_oc' -> list of ('sum', scale, zp) /
    ('eltwise', alg, alpha, beta) / ('binary', alg, dt, mask_name).  Names are checked
    against dnnq's eltwise / binary algorithms."""
    from dnnq.memory import DATA_TYPES
    from dnnq.post_ops import BINARY_ALGS, ELTWISE_ALGS
    ops = []
    if not text:
        return ops
    for item in text.split("+"):
        f = item.split(":")
        kind = f[0].lower()
        if kind == "sum":
            if len(f) > 3:
                raise InvalidArguments(f"--attr-post-ops: got {item!r}; expected sum[:SCALE[:ZP]]")
            ops.append(("sum", _number(item, f[1], float) if len(f) > 1 else 1.0,
                        _number(item, f[2], int) if len(f) > 2 else 0))
        elif kind in BINARY_ALGS:
            dt = f[1] if len(f) > 1 else "f32"
            mask = f[2] if len(f) > 2 else "common"
            if dt not in DATA_TYPES or not _MASK.fullmatch(mask) or len(f) > 3:
                raise InvalidArguments(f"--attr-post-ops: got {item!r}; expected "
                                       f"{kind}:DT[:MASK] with DT one of {', '.join(DATA_TYPES)} "
                                       "and MASK common, per_oc, per_tensor, per_dim_N or an "
                                       "integer mask")
            ops.append(("binary", kind, dt, mask))
        elif kind in ELTWISE_ALGS:
            if len(f) > 3:
                raise InvalidArguments(f"--attr-post-ops: got {item!r}; expected "
                                       f"{kind}[:ALPHA[:BETA]]")
            ops.append(("eltwise", kind, _number(item, f[1], float) if len(f) > 1 else 0.0,
                        _number(item, f[2], float) if len(f) > 2 else 0.0))
        else:
            raise InvalidArguments(f"--attr-post-ops: got {item!r}; expected sum, an eltwise "
                                   f"({', '.join(ELTWISE_ALGS)}) or a binary post-op "
                                   f"({', '.join(BINARY_ALGS)})")
    if sum(op[0] == "sum" for op in ops) > 1:
        raise InvalidArguments(f"--attr-post-ops: got {text!r}; expected at most one sum")
    return ops
