"""Deprecated: the op registry is :mod:`tabzoo.kernels.op_registry` (renamed in issue 31).

"registry" alone is the plugin registry (``tabzoo.plugins.get_registry()``); this module's old
name kept the kernel ops' registry under the same word. Importing it warns and gives the new
module itself (same objects, same state), so old imports keep working until it is removed.
"""

from __future__ import annotations

import sys
import warnings

from tabzoo.kernels import op_registry as _op_registry

warnings.warn("tabzoo.kernels.registry is renamed tabzoo.kernels.op_registry; import it from there "
              "(tabzoo.kernels.registry will be removed).", DeprecationWarning, stacklevel=2)

sys.modules[__name__] = _op_registry
