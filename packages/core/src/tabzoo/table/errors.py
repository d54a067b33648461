"""Specific input errors of :mod:`tabzoo.table`.

Every class derives from :class:`tabzoo.errors.TabzooInputError` (itself a ``ValueError``), so
``except TabzooInputError`` (or ``except ValueError``) catches all of them. Each message names the
offending column, row or key, and says how to fix it.
"""

from __future__ import annotations

from tabzoo.errors import InvalidValueError, TabzooInputError

__all__ = [
    "DTypeError",
    "DuplicateColumnError",
    "DuplicateKeyError",
    "EmptyContextError",
    "ForeignKeyError",
    "InvalidLabelError",
    "InvalidTaskError",
    "InvalidValueError",
    "MissingFileError",
    "PrimaryKeyError",
    "RaggedRowsError",
    "SchemaMismatchError",
    "ShapeError",
    "SingleClassError",
    "TimeColumnError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnseenLabelError",
]


class DTypeError(TabzooInputError):
    """A column (or tensor) holds values of a type that the requested/inferred type can't hold."""


class ShapeError(TabzooInputError):
    """An array or tensor has the wrong number of dimensions or a length that disagrees."""


class RaggedRowsError(ShapeError):
    """Rows (or columns) of the input have different lengths."""


class MissingFileError(TabzooInputError, FileNotFoundError):
    """A database path that does not exist or is a folder (also a ``FileNotFoundError``)."""


class DuplicateColumnError(TabzooInputError):
    """Two columns share one name."""


class UnknownColumnError(TabzooInputError):
    """A column name that the table does not have."""


class SchemaMismatchError(TabzooInputError):
    """Two parts that must share a schema do not (e.g. context and query columns)."""


class InvalidTaskError(TabzooInputError):
    """The task string or class count is not valid."""


class InvalidLabelError(TabzooInputError):
    """A label is NaN/inf, not an integer class index, or out of ``0..n_classes-1``."""


class SingleClassError(InvalidLabelError):
    """A classification context holds only one class."""


class UnseenLabelError(InvalidLabelError):
    """A query label never appears among the context labels."""


class EmptyContextError(TabzooInputError):
    """An episode has no context rows."""


class PrimaryKeyError(TabzooInputError):
    """A primary key is missing, refers to an unknown column, or has missing values."""


class DuplicateKeyError(PrimaryKeyError):
    """A primary-key value appears in more than one row."""


class ForeignKeyError(TabzooInputError):
    """A foreign key points to no table/column, or one of its values to no row."""


class TimeColumnError(TabzooInputError):
    """A time column is unknown, not a datetime, has missing values, or is not sorted."""


class UnknownTableError(TabzooInputError):
    """A table name that the database does not have."""
