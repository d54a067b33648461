"""tabzoo.kernels: the op registry (layer 3).

Public ops: :func:`masked_attention`, :func:`linear_attention` (and its stateful pair
:func:`linear_attention_state` / :func:`linear_attention_read` for streamed inference),
:func:`selective_scan` and the depthwise :func:`causal_conv1d` in front of it, and two ops of
Ramba's block: :func:`gathered_attention` (each row's queries over its own key tokens) and
:func:`bimamba_inner` (both directions of the gated bidirectional Mamba mixer in one op). Each
dispatches to the best available backend that supports its inputs; ``use(name)`` or the env
var ``TABZOO_KERNELS`` forces one (see :mod:`tabzoo.kernels.op_registry` for the exact rules).
"""

from tabzoo.kernels import banded as _banded  # noqa: E402, F401  (masked_attention/banded)
from tabzoo.kernels.attention import masked_attention  # noqa: E402  (registers its backends)
from tabzoo.kernels.bimamba import PARAMS as PARAMS_BIMAMBA  # noqa: E402
from tabzoo.kernels.bimamba import bimamba_inner  # noqa: E402
from tabzoo.kernels.causal_conv import causal_conv1d  # noqa: E402
from tabzoo.kernels.gathered_attention import gathered_attention  # noqa: E402
from tabzoo.kernels.linear_attention import linear_attention  # noqa: E402
from tabzoo.kernels.linear_state import linear_attention_read, linear_attention_state  # noqa: E402
from tabzoo.kernels.op_registry import (
    ENV_VAR,
    Backend,
    Cost,
    assume_device,
    candidates,
    forced_backend,
    list_backends,
    list_ops,
    register_backend,
    select_backend,
    unregister_backend,
    use,
)
from tabzoo.kernels.selective_scan import selective_scan  # noqa: E402
from tabzoo.kernels.triton import register as _register_triton  # noqa: E402

_register_triton()  # cheap: triton itself is imported on first use only

__all__ = [
    "ENV_VAR",
    "PARAMS_BIMAMBA",
    "Backend",
    "Cost",
    "assume_device",
    "bimamba_inner",
    "candidates",
    "causal_conv1d",
    "forced_backend",
    "gathered_attention",
    "linear_attention",
    "linear_attention_read",
    "linear_attention_state",
    "list_backends",
    "list_ops",
    "masked_attention",
    "register_backend",
    "select_backend",
    "selective_scan",
    "unregister_backend",
    "use",
]
