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


class InvalidValueError(TabzooInputError):
    """A value is out of its allowed domain (e.g. ``inf`` in features, a negative category code, a
    setting that must be a positive integer). Also importable from :mod:`tabzoo.table.errors`."""


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


class HangError(TabzooError, TimeoutError):
    """Work that made no progress (almost no CPU used) for its time limit was stopped; the message
    names the limit and the option that raises it (``tabzoo demo --timeout``, ``tabzoo bench --timeout``)."""


class MemoryLimitError(TabzooInputError, MemoryError):
    """An estimator's estimated peak memory for this input exceeds the limit; the message gives
    the estimate, the limit and the fix (fewer rows or features, a smaller chunk, or a higher
    ``memory_limit``)."""


_NOT_FITTED: type | None = None


def _not_fitted_error() -> type:
    """``NotFittedError``: a :class:`TabzooInputError` that is also scikit-learn's
    ``sklearn.exceptions.NotFittedError`` (an ``AttributeError`` where scikit-learn is not
    installed). Built on first use, so importing :mod:`tabzoo.errors` never imports scikit-learn."""
    global _NOT_FITTED
    if _NOT_FITTED is None:
        try:
            from sklearn.exceptions import NotFittedError as base
        except ImportError:  # pragma: no cover - only without the sklearn extra
            base = AttributeError  # type: ignore[misc,assignment]

        class NotFittedError(TabzooInputError, base):  # type: ignore[valid-type,misc]
            """The estimator is not fitted yet: the message says to call ``fit`` (or ``load``)."""

        NotFittedError.__module__ = __name__
        _NOT_FITTED = NotFittedError
    return _NOT_FITTED


def __getattr__(name: str) -> type:
    if name == "NotFittedError":
        return _not_fitted_error()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
