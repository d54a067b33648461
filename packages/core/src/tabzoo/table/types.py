"""Column types and the (explicit, documented) rules that infer them.

Inference rules, applied when no type is given for a column:

========================================  ==================
input                                     inferred type
========================================  ==================
bool dtype (numpy, pandas ``boolean``,     ``BOOLEAN``
arrow ``bool``)
signed/unsigned int, float (incl. pandas  ``NUMERIC``
nullable ``Int64``/``Float64``, arrow
decimals)
``datetime64`` (any unit), tz-aware       ``DATETIME``
pandas datetimes (converted to UTC),
arrow ``timestamp``/``date``
pandas ``category``, arrow dictionary     ``CATEGORICAL``
str / bytes / pandas ``string``/``str``   ``CATEGORICAL`` (never ``TEXT``, never
                                          parsed as numbers: ask for ``NUMERIC`` or
                                          ``TEXT`` explicitly)
object dtype                              from the Python types of the non-missing
                                          values: all bool -> ``BOOLEAN``; all
                                          int/float -> ``NUMERIC``; all
                                          datetime/date -> ``DATETIME``; all str ->
                                          ``CATEGORICAL``; a mix raises
                                          :class:`~tabzoo.table.errors.DTypeError`
a column with no observed value           ``NUMERIC`` (``CATEGORICAL`` when its dtype
                                          is a pandas/arrow string type)
complex, timedelta, nested                raises ``DTypeError``
========================================  ==================

Missing values are ``None``, float ``NaN``, ``NaT``, ``pd.NA`` and arrow nulls. Nothing else (not
``""``, not ``"NA"``) counts as missing. ``inf`` is a value, not a missing value.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ColumnType", "ForeignKey"]


class ColumnType(StrEnum):
    """The type of one table column (a ``str`` enum: ``ColumnType.NUMERIC == "numeric"``)."""

    NUMERIC = "numeric"
    CATEGORICAL = "categorical"
    BOOLEAN = "boolean"
    DATETIME = "datetime"
    TEXT = "text"

    @classmethod
    def parse(cls, value: ColumnType | str) -> ColumnType:
        """Return ``value`` as a :class:`ColumnType`; accepts the enum or its string value.

        :raises DTypeError: if ``value`` names no column type.
        """
        if isinstance(value, ColumnType):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            from tabzoo.table.errors import DTypeError

            options = ", ".join(t.value for t in cls)
            raise DTypeError(
                f"{value!r} is not a column type; use one of {options} (or ColumnType.<NAME>)"
            ) from None


# a relational schema's link (tabzoo.table.relational), here so that its readers need not import the database
@dataclass(frozen=True)
class ForeignKey:
    """``table.column`` references ``ref_table.ref_column`` (default: ``ref_table``'s primary key)."""

    table: str
    column: str
    ref_table: str
    ref_column: str | None = None

    def __str__(self) -> str:
        return f"{self.table}.{self.column} -> {self.ref_table}.{self.ref_column or '<pk>'}"
