"""tabzoo: deep learning on tables. The core package."""

from tabzoo.errors import (
    KernelNotSupportedError,
    PluginLoadError,
    TabzooError,
    TabzooInputError,
)

__version__ = "0.1.0"

__all__ = [
    "KernelNotSupportedError",
    "PluginLoadError",
    "TabzooError",
    "TabzooInputError",
    "__version__",
]
