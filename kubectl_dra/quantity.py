"""Exact Kubernetes ``resource.Quantity`` values (k8s.io/apimachinery/pkg/api/resource).

Capacities, consumed amounts and multipliers in DRA objects are quantities. This tool compares
and adds them and prints them back, and every one of those results must match the API server
exactly, so a value is never a float: it is a whole number of nano-units (``1n`` = 10^-9).
Upstream parsing never keeps anything finer than ``1n``, and adding, subtracting and multiplying
by a whole number cannot produce anything finer, so this loses nothing.

Behaviour follows upstream's ``ParseQuantity``, ``CanonicalizeBytes``, ``Add``/``Sub``/``Mul``
and ``Value``/``MilliValue``/``ScaledValue``. Where upstream disagrees with itself, this follows
the documented grammar and canonical form (the ``internal/exact`` reference model upstream tests
itself against):

* ``String()`` upstream sometimes echoes the input verbatim (``"+1"``, ``"01"``, ``"1E3"``,
  ``"5."``, ``"1.500k"``); ``str()`` here is always the canonical form.
* Upstream's scanner reads a number with no digits (``"."``, ``"-"``, ``"k"``) as 0; the grammar
  needs a digit, so these are rejected.
* Upstream narrows an exponent to int32 and wraps; here it is exact. A value of 10^1000 or more
  is rejected instead, so no input can force a huge allocation.
* Rounding to an integer is away from zero (upstream's int64 path); upstream's decimal path rounds
  negative non-integers differently.
"""

from __future__ import annotations

import enum
import json
import re
from fractions import Fraction

from kubectl_dra.errors import QuantityError

__all__ = ["Format", "Quantity", "parse_quantity"]

_NANO = 10**9
_POW10 = tuple(10**i for i in range(40))  # the units ScaledValue divides by, computed once
_MAX_INTEGER_DIGITS = 1000  # parse rejects |value| >= 10^1000: nothing real is near it
_BINARY_CAP = (2**63 - 1) * _NANO  # upstream caps a BinarySI parse at MaxInt64, silently
_BINARY_FRACTION_DIGITS = 100  # see _binary_nanos


class Format(str, enum.Enum):
    """How a quantity prints; the values are upstream's ``resource.Format`` names."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "n": (10, -9, Format.DECIMAL_SI),
    "u": (10, -6, Format.DECIMAL_SI),
    "m": (10, -3, Format.DECIMAL_SI),
    "": (10, 0, Format.DECIMAL_SI),
    "k": (10, 3, Format.DECIMAL_SI),
    "M": (10, 6, Format.DECIMAL_SI),
    "G": (10, 9, Format.DECIMAL_SI),
    "T": (10, 12, Format.DECIMAL_SI),
    "P": (10, 15, Format.DECIMAL_SI),
    "E": (10, 18, Format.DECIMAL_SI),
    "Ki": (2, 10, Format.BINARY_SI),
    "Mi": (2, 20, Format.BINARY_SI),
    "Gi": (2, 30, Format.BINARY_SI),
    "Ti": (2, 40, Format.BINARY_SI),
    "Pi": (2, 50, Format.BINARY_SI),
    "Ei": (2, 60, Format.BINARY_SI),
}
_DECIMAL_NAMES = {power: name for name, (base, power, _) in _SUFFIXES.items() if base == 10}
_BINARY_NAMES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

# Sign, integer digits, optional "." and fraction digits, then whatever is left (the suffix).
# ASCII digits only: int() would also take "١" or "1_0".
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.ASCII | re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?)([0-9]+)", re.ASCII)
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")  # upstream's scanner alphabet for suffixes
_EXPECTED = "expected a number with an optional suffix, such as 500m, 1.5Gi or 2e3"
_KNOWN = "n u m k M G T P E Ki Mi Gi Ti Pi Ei, or an exponent such as e3"


def _invalid(text: object, reason: str) -> QuantityError:
    shown = json.dumps(text, ensure_ascii=False) if isinstance(text, str) else repr(text)
    return QuantityError(f"invalid quantity {shown}: {reason}")


def _round_away(numerator: int, denominator: int) -> int:
    """numerator / denominator (denominator > 0) rounded away from zero, as upstream rounds."""
    whole, rest = divmod(abs(numerator), denominator)
    if rest:
        whole += 1
    return -whole if numerator < 0 else whole


def _fraction_nanos(value: Fraction) -> int:
    scaled = value * _NANO
    return _round_away(scaled.numerator, scaled.denominator)


class Quantity:
    """An exact, immutable quantity and the format it prints in.

    Equality, ordering and hashing go by value only (``1k == 1000``, as upstream ``Cmp``) and
    also work against ``int`` and ``Fraction``. A quantity is always truthy, even zero, so
    ``q or default`` only replaces a missing one; use :meth:`is_zero`.
    """

    __slots__ = ("_nanos", "_format")

    def __init__(self, text: str) -> None:
        """``Quantity("1.5Gi")`` is :meth:`parse`; it makes ``repr()`` evaluate back."""
        parsed = _parse(text)
        object.__setattr__(self, "_nanos", parsed._nanos)
        object.__setattr__(self, "_format", parsed._format)

    @classmethod
    def _make(cls, nanos: int, fmt: Format) -> Quantity:
        q = _new(cls)
        _set_nanos(q, nanos)  # the slots' own descriptors: immutable to everyone else
        _set_format(q, fmt)
        return q

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse as upstream ``ParseQuantity``; raise :class:`QuantityError` quoting the input.

        Finer than ``1n`` rounds away from zero to the next ``1n`` (you asked for some, you get
        some); BinarySI is capped at 2^63-1 in magnitude, and a BinarySI value strictly between
        -1 and 1 becomes DecimalSI.
        """
        return _parse(text)

    @classmethod
    def from_int(cls, value: int, fmt: Format | str = Format.DECIMAL_SI) -> Quantity:
        """``value`` whole units, as upstream ``NewQuantity``; the format is kept as given."""
        return cls._make(_require_int(value) * _NANO, Format(fmt))

    @classmethod
    def from_milli(cls, value: int, fmt: Format | str = Format.DECIMAL_SI) -> Quantity:
        """``value`` thousandths, as upstream ``NewMilliQuantity``; the format is kept as given."""
        return cls._make(_require_int(value) * (_NANO // 1000), Format(fmt))

    @classmethod
    def from_fraction(cls, value: Fraction | int, fmt: Format | str = Format.DECIMAL_SI) -> Quantity:
        """An exact rational value; finer than ``1n`` rounds away from zero, as parsing does."""
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise TypeError(f"expected int or Fraction, got {type(value).__name__}")
        return cls._make(_fraction_nanos(Fraction(value)), Format(fmt))

    # -- accessors ------------------------------------------------------------------------------

    @property
    def format(self) -> Format:
        """The format ``str()`` uses (BinarySI still prints small or fractional values decimally)."""
        return self._format

    def as_fraction(self) -> Fraction:
        """The exact value."""
        return Fraction(self._nanos, _NANO)

    def is_zero(self) -> bool:
        return self._nanos == 0

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self._nanos > 0) - (self._nanos < 0)

    def scaled_value(self, scale: int) -> int:
        """value / 10^scale rounded away from zero (upstream ``ScaledValue``), never overflowing."""
        nanos = self._nanos
        shift = 9 + scale
        if shift <= 0:
            return nanos * 10**-shift
        unit = _POW10[shift] if shift < len(_POW10) else 10**shift
        # away from zero: a positive value rounds up (below one unit is one), a negative one down
        return -(-nanos // unit) if nanos >= 0 else nanos // unit

    def value(self) -> int:
        """Whole units rounded away from zero (upstream ``Value``: 1.2 -> 2, -1.2 -> -2)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Thousandths rounded away from zero (upstream ``MilliValue``: 0.1m -> 1)."""
        return self.scaled_value(-3)

    # -- canonical form -------------------------------------------------------------------------

    def __str__(self) -> str:
        """The canonical form: no fraction digits, and the largest suffix that loses nothing."""
        nanos = self._nanos
        if nanos == 0:
            return "0"
        sign = "-" if nanos < 0 else ""
        magnitude = abs(nanos)
        fmt = self._format
        if fmt is Format.BINARY_SI:
            # Below 1024 or with a fraction, BinarySI prints as DecimalSI.
            if magnitude < 1024 * _NANO or magnitude % _NANO:
                fmt = Format.DECIMAL_SI
            else:
                whole = magnitude // _NANO
                k = ((whole & -whole).bit_length() - 1) // 10
                if k < len(_BINARY_NAMES):
                    return f"{sign}{whole >> (10 * k)}{_BINARY_NAMES[k]}"
                # A multiple of 2^70 has no suffix beyond Ei; upstream's reference model
                # prints it in exponent form rather than drop the factor.
                fmt = Format.DECIMAL_EXPONENT
        digits = str(magnitude)
        mantissa = digits.rstrip("0")
        exponent = len(digits) - len(mantissa) - 9
        pad = exponent % 3
        mantissa += "0" * pad
        exponent -= pad
        if fmt is Format.DECIMAL_SI and exponent in _DECIMAL_NAMES:
            return sign + mantissa + _DECIMAL_NAMES[exponent]
        # DecimalExponent, or DecimalSI beyond E (10^18), which has no suffix.
        return f"{sign}{mantissa}e{exponent}" if exponent else sign + mantissa

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    # -- immutability, hashing, pickling ----------------------------------------------------------

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Quantity is immutable")

    def __reduce__(self):
        return (_restore, (self._nanos, self._format.value))

    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict) -> Quantity:
        return self

    def __hash__(self) -> int:
        # Same hash as the equal int or Fraction, since __eq__ says they are equal.
        return hash(Fraction(self._nanos, _NANO))

    # -- comparison -----------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        theirs = _nanos_of(other)
        return NotImplemented if theirs is None else self._nanos == theirs

    def __lt__(self, other: object) -> bool:
        theirs = _nanos_of(other)
        return NotImplemented if theirs is None else self._nanos < theirs

    def __le__(self, other: object) -> bool:
        theirs = _nanos_of(other)
        return NotImplemented if theirs is None else self._nanos <= theirs

    def __gt__(self, other: object) -> bool:
        theirs = _nanos_of(other)
        return NotImplemented if theirs is None else self._nanos > theirs

    def __ge__(self, other: object) -> bool:
        theirs = _nanos_of(other)
        return NotImplemented if theirs is None else self._nanos >= theirs

    # -- arithmetic -----------------------------------------------------------------------------
    # Upstream Add/Sub keep the receiver's format, or take the other's when the receiver is zero.
    # Besides quantities, only the int 0 is accepted, as the identity sum() starts from.

    def __add__(self, other: object) -> Quantity:
        if type(other) is Quantity:  # the hot path of every sum of requests
            q = _new(Quantity)
            _set_nanos(q, self._nanos + other._nanos)
            _set_format(q, self._format if self._nanos else other._format)
            return q
        if isinstance(other, Quantity):
            fmt = self._format if self._nanos else other._format
            return Quantity._make(self._nanos + other._nanos, fmt)
        return self if _is_int_zero(other) else NotImplemented

    def __radd__(self, other: object) -> Quantity:
        return self if _is_int_zero(other) else NotImplemented

    def __sub__(self, other: object) -> Quantity:
        if isinstance(other, Quantity):
            fmt = self._format if self._nanos else other._format
            return Quantity._make(self._nanos - other._nanos, fmt)
        return self if _is_int_zero(other) else NotImplemented

    def __rsub__(self, other: object) -> Quantity:
        return -self if _is_int_zero(other) else NotImplemented

    def __neg__(self) -> Quantity:
        return Quantity._make(-self._nanos, self._format)

    def __mul__(self, other: object) -> Quantity:
        """Scale by a dimensionless factor; the result keeps this quantity's format.

        By an int the result is exact (upstream ``Mul``). By a Fraction or another Quantity
        (its value taken as the factor) a result finer than ``1n`` rounds away from zero to the
        next ``1n``, the rule parsing applies, so every result still has a canonical string.
        """
        if isinstance(other, bool):
            return NotImplemented
        if isinstance(other, int):
            return Quantity._make(self._nanos * other, self._format)
        if isinstance(other, Quantity):
            return Quantity._make(_round_away(self._nanos * other._nanos, _NANO), self._format)
        if isinstance(other, Fraction):
            return Quantity._make(_fraction_nanos(self._nanos * other / _NANO), self._format)
        return NotImplemented

    def __rmul__(self, other: object) -> Quantity:
        if isinstance(other, Quantity):  # pragma: no cover - __mul__ handles Quantity * Quantity
            return NotImplemented
        return self.__mul__(other)


_new = object.__new__
_set_nanos = Quantity._nanos.__set__  # type: ignore[attr-defined]
_set_format = Quantity._format.__set__  # type: ignore[attr-defined]


def in_one_unit(values: "list[Quantity]") -> list[str]:
    """The values written with one suffix, the largest that keeps every one exact, so a row reads
    ``26000m / 47810m`` rather than ``26 / 47810m``: binary suffixes if any value is BinarySI,
    else decimal ones (milli, micro, nano for fractions). Zero stays ``0``."""
    nonzero = [abs(q._nanos) for q in values if q._nanos]
    if not nonzero:
        return [str(q) for q in values]
    if any(q._format is Format.BINARY_SI for q in values) and all(n % _NANO == 0 for n in nonzero):
        scales = [(1024 ** k * _NANO, name) for k, name in reversed(list(enumerate(_BINARY_NAMES)))]
    else:
        scales = [(10 ** (power + 9), name) for power, name in sorted(_DECIMAL_NAMES.items(), reverse=True)]
    unit, name = next(((u, n) for u, n in scales if all(v % u == 0 for v in nonzero)), (1, "n"))
    return [f"{q._nanos // unit}{name}" if q._nanos else "0" for q in values]


def parse_quantity(text: str) -> Quantity:
    """Module-level spelling of :meth:`Quantity.parse`."""
    return _parse(text)


def _restore(nanos: int, fmt: str) -> Quantity:
    return Quantity._make(nanos, Format(fmt))


def _require_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected int, got {type(value).__name__}")
    return value


def _is_int_zero(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _nanos_of(value: object) -> int | Fraction | None:
    if isinstance(value, Quantity):
        return value._nanos
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Fraction)):
        return value * _NANO
    return None


def _parse(text: object) -> Quantity:
    # Not TypeError: pydantic validators only turn ValueError into a validation message.
    if not isinstance(text, str):
        raise _invalid(text, f"expected a string, got {type(text).__name__}")
    if not text:
        raise _invalid(text, "empty string")
    match = _NUMBER.fullmatch(text)
    assert match is not None  # the pattern accepts any string
    sign, whole, fraction, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    if not whole and not fraction:
        raise _invalid(text, _EXPECTED)
    base, power, fmt = _interpret_suffix(text, suffix)
    if base == 10:
        nanos = _decimal_nanos(text, whole, fraction, power)
    else:
        nanos = min(_binary_nanos(whole, fraction, power), _BINARY_CAP)
        if 0 < nanos < _NANO:
            fmt = Format.DECIMAL_SI
    return Quantity._make(-nanos if sign == "-" else nanos, fmt)


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        if suffix[0] not in _SUFFIX_LETTERS:  # "1.2.3", "1 ": not a suffix at all
            raise _invalid(text, _EXPECTED)
        raise _invalid(text, f"unknown suffix {json.dumps(suffix, ensure_ascii=False)} (use {_KNOWN})")
    digits = match.group(2).lstrip("0") or "0"
    exponent = int(digits) if len(digits) <= 20 else 2**64  # avoid int() on a huge string
    if match.group(1) == "-":
        exponent = -exponent
    if not -(2**63) <= exponent < 2**63:  # upstream reads the exponent as an int64
        raise _invalid(text, "exponent out of range")
    return 10, exponent, Format.DECIMAL_EXPONENT


def _decimal_nanos(text: str, whole: str, fraction: str, power: int) -> int:
    """|whole.fraction| * 10^power in nano-units, rounded away from zero, working on digits."""
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return 0
    significant = digits.rstrip("0")
    exponent = power - len(fraction) + len(digits) - len(significant)
    if exponent + len(significant) > _MAX_INTEGER_DIGITS:
        raise _invalid(text, f"too large (at least 10^{_MAX_INTEGER_DIGITS})")
    shift = exponent + 9
    if shift >= 0:
        return int(significant) * 10**shift
    # Finer than 1n: drop those digits (the last one is non-zero) and round up.
    drop = -shift
    return 1 if drop >= len(significant) else int(significant[:-drop]) + 1


def _binary_nanos(whole: str, fraction: str, power: int) -> int:
    """|whole.fraction| * 2^power in nano-units, rounded away from zero (uncapped below 10^19)."""
    whole = whole.lstrip("0")
    fraction = fraction.rstrip("0")
    if len(whole) > 19:
        return _BINARY_CAP  # at least 10^19, over the cap
    # Past 69 fraction digits the nano count cannot be whole (2^60 * 10^9 < 10^28), and digits
    # past the 100th cannot change its floor, so keep 100 and round up.
    inexact = len(fraction) > _BINARY_FRACTION_DIGITS
    fraction = fraction[:_BINARY_FRACTION_DIGITS]
    numerator = (int(whole + fraction or "0") << power) * _NANO
    nanos, rest = divmod(numerator, 10 ** len(fraction))
    return nanos + 1 if rest or inexact else nanos
