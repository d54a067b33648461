"""Layer 1 of tabzoo: typed tables, in-context episodes, multi-target and relational data.

Public names: :class:`ColumnType`, :class:`Table`, :class:`Episode`, :class:`EpisodeBatch`,
:class:`MultiTargetTable`, :class:`RelationalDatabase`, :class:`ForeignKey`, and the input-error
classes (all subclasses of :class:`tabzoo.errors.TabzooInputError`).
"""

from tabzoo.table.episode import Episode, EpisodeBatch
from tabzoo.table.errors import (
    DTypeError,
    DuplicateColumnError,
    DuplicateKeyError,
    EmptyContextError,
    ForeignKeyError,
    InvalidLabelError,
    InvalidTaskError,
    InvalidValueError,
    PrimaryKeyError,
    RaggedRowsError,
    SchemaMismatchError,
    ShapeError,
    SingleClassError,
    TimeColumnError,
    UnknownColumnError,
    UnknownTableError,
    UnseenLabelError,
)
from tabzoo.table.multitarget import MultiTargetTable
from tabzoo.table.relational import ForeignKey, RelationalDatabase
from tabzoo.table.table import Table
from tabzoo.table.types import ColumnType

__all__ = [
    "ColumnType",
    "DTypeError",
    "DuplicateColumnError",
    "DuplicateKeyError",
    "EmptyContextError",
    "Episode",
    "EpisodeBatch",
    "ForeignKey",
    "ForeignKeyError",
    "InvalidLabelError",
    "InvalidTaskError",
    "InvalidValueError",
    "MultiTargetTable",
    "PrimaryKeyError",
    "RaggedRowsError",
    "RelationalDatabase",
    "SchemaMismatchError",
    "ShapeError",
    "SingleClassError",
    "Table",
    "TimeColumnError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnseenLabelError",
]
