"""The single error hierarchy of tabzoo.

Every message says what was wrong and what to do about it.
"""

from __future__ import annotations


class TabzooError(Exception):
    """Base class of every error tabzoo raises on purpose."""


class TabzooInputError(TabzooError, ValueError):
    """Invalid user input: the message names the column or row and the fix."""


class InputTypeError(TabzooInputError, TypeError):
    """A value of a type no column can hold (a dict, a list, bytes labels, ...).

    Also a ``TypeError``, as scikit-learn expects for such input.
    """


class PluginLoadError(TabzooError, ImportError):
    """A plugin could not be loaded, or two plugins claim the same name."""


class AmbiguousPluginError(PluginLoadError):
    """A name is registered by two or more distributions; the message names them and how to disable either."""


class PluginBuildError(TabzooError, RuntimeError):
    """A plugin's ``build`` (or factory) raised; the message names its distribution and version."""


class KernelNotSupportedError(TabzooError, RuntimeError):
    """No kernel backend supports these inputs; the message lists each backend's reasons."""


class CheckpointError(TabzooError, OSError):
    """A checkpoint is missing, truncated, corrupt or of another architecture."""
