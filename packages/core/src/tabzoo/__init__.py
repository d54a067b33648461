"""tabzoo: deep learning on tables. The core package."""

import os as _os
import sys as _sys

# GNU OpenMP threads spin while they wait; on a machine with more runnable threads than cores that made
# 2 torch threads ~6-12x slower than 1 (tabzoo.kernels.threads). Passive waiting, unless the user chose
# a policy; it only takes effect before torch (and its OpenMP runtime) is loaded.
if "OMP_WAIT_POLICY" not in _os.environ and "torch" not in _sys.modules:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

from tabzoo.errors import (
    KernelNotSupportedError,
    PluginLoadError,
    TabzooError,
    TabzooInputError,
)

__version__ = "0.1.0"

#: the wait policy torch's OpenMP runtime loads (loaded) with, None: the runtime's default (spinning);
#: read by tabzoo.kernels.threads.wait_policy, which the benchmarks record
OMP_WAIT_POLICY_AT_TORCH_LOAD: str | None = _os.environ.get("OMP_WAIT_POLICY")

__all__ = [
    "KernelNotSupportedError",
    "PluginLoadError",
    "TabzooError",
    "TabzooInputError",
    "__version__",
]
