"""Transition alias: the oneDNN bridge moved into the package as ``dnnq.testing``.

Tests written before the move (``import onednn_ref``, ``from dnnq.testing._capi import ...``)
keep working through this alias; new tests import ``dnnq.testing``.  Delete this file once no
test uses the old name (``grep -rn onednn_ref tests``).
"""
import sys

import dnnq.testing as _bridge
from dnnq.testing import _attr, _capi, _enums, _primitives, _rnn

sys.modules[__name__] = _bridge
for _name, _mod in (("_attr", _attr), ("_capi", _capi), ("_enums", _enums),
                    ("_primitives", _primitives), ("_rnn", _rnn)):
    sys.modules[f"{__name__}.{_name}"] = _mod
