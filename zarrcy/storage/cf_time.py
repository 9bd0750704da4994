"""CF time encodings (``units: "<unit> since <date>"``, ``calendar``): re-encoding the
values of one encoding onto another, exactly or not at all.

Files written one period at a time usually carry their own ``units`` on ``time``
(``days since 2020-01-01``, ``days since 2020-02-01``, ...).  Joining them along time
(``zarrcy convert 'part_*.nc' out.zarr --concat-dim time``) needs every file's values
on one unit: :func:`recoder` gives the function that maps values of one encoding onto
another (CF conventions 1.11 section 4.4 "Time Coordinate"), and refuses -- naming the
value -- whenever a value is not an integer in the target unit (a float value of the
target would not decode to the same instant everywhere), does not fit the stored data
type, or the calendars differ (a ``noleap`` day count is not a ``standard`` one).

The arithmetic is exact: each encoding is ``value * unit + epoch`` in integer
microseconds from a common origin of its calendar, so ``days since 2020-01-11`` =
``days since 2020-01-01`` + 10 days whatever the calendar.  Epochs are parsed by
``cftime`` (installed with netCDF4) for every CF calendar; without it, the
``standard`` / ``proleptic_gregorian`` calendars from 1582-10-15 on are parsed with
numpy's (proleptic Gregorian) ``datetime64``.  Months and years are not fixed
durations (CF 4.4) and are refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

__all__ = ["TimeEncoding", "TimeUnitsError", "is_time_units", "parse_time_encoding", "recoder"]

#: microseconds per unit (CF / UDUNITS names, as xarray reads them)
_UNIT_US = {
    "microseconds": 1, "microsecond": 1, "us": 1, "µs": 1,
    "milliseconds": 1000, "millisecond": 1000, "msec": 1000, "ms": 1000,
    "seconds": 10**6, "second": 10**6, "secs": 10**6, "sec": 10**6, "s": 10**6,
    "minutes": 60 * 10**6, "minute": 60 * 10**6, "mins": 60 * 10**6, "min": 60 * 10**6,
    "hours": 3600 * 10**6, "hour": 3600 * 10**6, "hrs": 3600 * 10**6, "hr": 3600 * 10**6, "h": 3600 * 10**6,
    "days": 86400 * 10**6, "day": 86400 * 10**6, "d": 86400 * 10**6,
    "weeks": 7 * 86400 * 10**6, "week": 7 * 86400 * 10**6,
}
_CALENDARS = {
    "standard": "standard", "gregorian": "standard", "": "standard",
    "proleptic_gregorian": "proleptic_gregorian",
    "noleap": "noleap", "365_day": "noleap",
    "all_leap": "all_leap", "366_day": "all_leap",
    "360_day": "360_day", "julian": "julian",
}
_SINCE = re.compile(r"^\s*([A-Za-zµ_]+)\s+since\s+(.+?)\s*$")


class TimeUnitsError(ValueError):
    """A CF time encoding that cannot be parsed, or values that cannot be re-encoded exactly."""


def is_time_units(units: Any) -> bool:
    """True for a CF time ``units`` string (``"<unit> since <date>"``)."""
    return isinstance(units, str) and _SINCE.match(units) is not None


def _calendar(calendar: Any) -> str:
    name = "" if calendar is None else str(calendar).strip().lower()
    if name not in _CALENDARS:
        raise TimeUnitsError(f"calendar {calendar!r}: expected a CF calendar ({', '.join(sorted(set(_CALENDARS) - {''}))})")
    return _CALENDARS[name]


def _epoch_us(epoch: str, calendar: str) -> int:
    """Microseconds from the calendar's own origin (0001-01-01, or 1970 for numpy) to ``epoch``."""
    try:
        import cftime
    except ImportError:
        cftime = None
    if cftime is not None:
        try:
            d = cftime.num2date(0, f"seconds since {epoch}", calendar=calendar)
            origin = cftime.num2date(0, "seconds since 1970-01-01", calendar=calendar)
        except (ValueError, TypeError) as e:
            raise TimeUnitsError(f"cannot parse the reference date {epoch!r}: {e}") from None
        td = d - origin
        return (td.days * 86400 + td.seconds) * 10**6 + td.microseconds
    if calendar not in ("standard", "proleptic_gregorian"):
        raise TimeUnitsError(f"calendar {calendar!r} needs the cftime package (pip install cftime)")
    text = re.sub(r"\s*(UTC|Z|[+-]00:?00)$", "", epoch.strip(), flags=re.IGNORECASE).replace(" ", "T")
    try:
        d64 = np.datetime64(text, "us")
    except ValueError as e:
        raise TimeUnitsError(f"cannot parse the reference date {epoch!r}: {e}") from None
    if calendar == "standard" and d64 < np.datetime64("1582-10-15", "us"):
        raise TimeUnitsError(f"reference date {epoch!r} before 1582-10-15 in the standard calendar needs cftime")
    return int(d64.astype(np.int64))


@dataclass(frozen=True)
class TimeEncoding:
    """One CF time encoding: ``units`` (as written), its ``calendar`` (CF name, aliases
    folded), the unit in microseconds and the reference date in microseconds."""

    units: str
    calendar: str
    unit_us: int
    epoch_us: int

    def same_instants(self, other: "TimeEncoding") -> bool:
        return (self.calendar, self.unit_us, self.epoch_us) == (other.calendar, other.unit_us, other.epoch_us)


def parse_time_encoding(units: Any, calendar: Any = None) -> TimeEncoding:
    """``units``/``calendar`` attributes -> a :class:`TimeEncoding` (TimeUnitsError if not CF time)."""
    m = _SINCE.match(units) if isinstance(units, str) else None
    if m is None:
        raise TimeUnitsError(f"units {units!r}: expected '<unit> since <date>' (CF time units)")
    unit = m.group(1).lower()
    if unit not in _UNIT_US:
        raise TimeUnitsError(f"units {units!r}: expected a fixed time unit (days, hours, minutes, seconds, "
                             f"milliseconds, microseconds), received {m.group(1)!r}")
    cal = _calendar(calendar)
    return TimeEncoding(str(units), cal, _UNIT_US[unit], _epoch_us(m.group(2), cal))


def recoder(src: TimeEncoding, dst: TimeEncoding, dtype: np.dtype,
            fill: Any = None) -> Callable[[np.ndarray], np.ndarray] | None:
    """A function mapping values encoded with ``src`` onto ``dst`` (stored as ``dtype``),
    or None when both encode the same instants (nothing to do).  The function raises
    :class:`TimeUnitsError` naming the first value that is not an integer in the target
    unit or does not fit ``dtype``; ``fill`` (a missing value) and NaN stay as they are."""
    if src.calendar != dst.calendar:
        raise TimeUnitsError(f"calendar {src.calendar!r} differs from {dst.calendar!r}: the day counts of different "
                             "calendars are not comparable")
    if src.same_instants(dst):
        return None
    dtype = np.dtype(dtype)
    if dtype.kind not in "iuf":
        raise TimeUnitsError(f"time values of type {dtype} cannot be re-encoded (expected integers or floats)")
    shift = src.epoch_us - dst.epoch_us  # microseconds

    def one(v: Any) -> int:
        """An exact value of the source encoding -> the integer in the target unit."""
        num = Fraction(v) * src.unit_us + shift
        q = num / dst.unit_us
        if q.denominator != 1:
            raise TimeUnitsError(f"value {_show(v)} ({src.units}) is {float(q)!r} {dst.units}: not an integer in the "
                                 "target unit (pass --time-units with a finer unit)")
        return int(q)

    def recode(values: np.ndarray) -> np.ndarray:
        a = np.asarray(values)
        out = np.array(a, dtype=dtype, copy=True)
        keep = np.zeros(a.shape, dtype=bool)
        if a.dtype.kind == "f":
            keep |= np.isnan(a)
            if np.isinf(a).any():
                raise TimeUnitsError(f"value {_show(a[np.isinf(a)].reshape(-1)[0])} ({src.units}) is not a time")
        if fill is not None:
            with np.errstate(invalid="ignore"):
                keep |= a == fill
        idx = np.flatnonzero(~keep.reshape(-1))
        flat_in = a.reshape(-1)
        flat_out = out.reshape(-1)
        if a.dtype.kind in "iu" and idx.size and _fits_int64(flat_in[idx], src.unit_us, shift):
            x = flat_in[idx].astype(np.int64) * src.unit_us + shift
            bad = np.flatnonzero(x % dst.unit_us)
            if bad.size:
                one(flat_in[idx][bad[0]])  # raises, naming the value
            res = [int(r) for r in (x // dst.unit_us).tolist()]
        else:
            res = [one(v) for v in flat_in[idx].tolist()]
        if res:
            for i in (res.index(min(res)), res.index(max(res))):
                if not _representable(res[i], dtype):
                    raise TimeUnitsError(f"value {_show(flat_in[idx][i])} ({src.units}) is {res[i]} {dst.units}, "
                                         f"which {dtype} cannot hold exactly")
            flat_out[idx] = np.array(res, dtype=object).astype(dtype)
        return out

    return recode


def _fits_int64(v: np.ndarray, unit: int, shift: int) -> bool:
    if v.size == 0:
        return True
    m = max(abs(int(v.min())), abs(int(v.max())))
    return m * unit + abs(shift) < 2**62


def _representable(r: int, dtype: np.dtype) -> bool:
    if dtype.kind == "f":
        return abs(r) <= 2 ** (np.finfo(dtype).nmant + 1)
    info = np.iinfo(dtype)
    return info.min <= r <= info.max


def _show(v: Any) -> str:
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return repr(v)
    return repr(v.item() if isinstance(v, np.generic) else v)
