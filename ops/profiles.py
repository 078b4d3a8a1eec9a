"""One way to turn a profile name (``test`` / ``small`` / ``full``) plus overrides into a work step's typed config
(issue 38 item 4), as KataGo's ``config_of_name``: a bad profile, field or value is one line naming it.

    STUDENT = Profiles("student", StudentConfig, {"test": dict(epochs=2), "small": {}, "full": dict(epochs=20)},
                       StudentError)
    cfg = STUDENT.resolve("small", seed=3)                 # StudentConfig, the profile's fields over the defaults
    cfg = STUDENT.parse("small", ["epochs=4", "holdout=0.1"])   # command-line FIELD=VALUE strings, typed by field
    STUDENT.resolve("huge")   # StudentError: profile: 'huge' is not one of test, small, full
    STUDENT.resolve("test", colour=1)   # StudentError: colour: not a student config field (known: ...)
    STUDENT.resolve("test", epochs="3")   # StudentError: epochs: '3' is not an int

An asset's config fields that say "None: the profile's" go through ``given`` so the profile fills what was not set:

    cfg = STUDENT.resolve(profile.checked(), **given(epochs=config.epochs, shape=config.shape or None))

A table row holds only the fields that differ from the dataclass's defaults. Each work step keeps its own error
class (``error``) so its callers' ``except`` clauses keep working. A neutral module: it knows no game.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

C = TypeVar("C")
TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class ProfileError(ValueError):
    """A bad profile name, field or value: one line naming it and the value."""


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "None"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _article(name: str) -> str:
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def _union_args(tp: Any) -> tuple | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


def conforms(value: Any, tp: Any) -> bool:
    """Whether ``value`` fits the annotation ``tp`` (bool is no int; an int is a float; a list or tuple fits a
    tuple type element by element); an annotation this does not know fits anything."""
    if tp is Any:
        return True
    if tp is type(None) or tp is None:
        return value is None
    union = _union_args(tp)
    if union is not None:
        return any(conforms(value, t) for t in union)
    origin = typing.get_origin(tp)
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            return False
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(conforms(v, t) for v, t in zip(value, args)))
    if origin is not None:  # list[...], dict[...], Literal and the like: not checked here
        return True
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, os.PathLike):
        return isinstance(value, (str, os.PathLike))
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def parse_value(text: str, tp: Any) -> Any:
    """``text`` (a command-line value) as the annotation ``tp``; ValueError when it cannot be one. A tuple type
    takes comma-separated elements; an optional field takes ``none``."""
    union = _union_args(tp)
    if union is not None:
        if type(None) in union and text.strip().lower() == "none":
            return None
        for t in (t for t in union if t is not type(None)):
            try:
                return parse_value(text, t)
            except ValueError:
                continue
        raise ValueError(text)
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(parse_value(p, args[0]) for p in parts)
        if args and len(args) != len(parts):
            raise ValueError(text)
        return tuple(parse_value(p, t) for p, t in zip(parts, args)) if args else tuple(parts)
    if tp is bool:
        word = text.strip().lower()
        if word in TRUE:
            return True
        if word in FALSE:
            return False
        raise ValueError(text)
    if tp is int:
        return int(text)
    if tp is float:
        return float(text)
    if tp is str or tp is Any:
        return text
    if isinstance(tp, type):
        return tp(text)
    return text


def given(**values: Any) -> dict[str, Any]:
    """The fields a caller set: ``values`` without those that are None (None: the profile's value)."""
    return {k: v for k, v in values.items() if v is not None}


def _hints(config: type) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(config)
    except Exception:  # an annotation that does not resolve: the field is not type-checked
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config)}


def _check_fields(config: type, what: str, error: type[Exception], values: Mapping[str, Any]) -> None:
    hints = _hints(config)
    for name, value in values.items():
        if name not in hints:
            raise error(f"{name}: not a {what} config field (known: {', '.join(sorted(hints))})")
        if not conforms(value, hints[name]):
            raise error(f"{name}: {value!r} is not {_article(_type_name(hints[name]))}")


def _build(config: type[C], error: type[Exception], what: str, values: Mapping[str, Any]) -> C:
    try:
        return config(**values)
    except TypeError as e:  # a required field missing: one line naming it
        raise error(f"{what} config: {e}") from None


def override(cfg: C, what: str, error: type[Exception] = ProfileError, **overrides: Any) -> C:
    """``cfg`` (a dataclass instance) with ``overrides`` replaced, each checked as ``Profiles.resolve`` checks."""
    _check_fields(type(cfg), what, error, overrides)
    return _build(type(cfg), error, what, {**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)},
                                           **overrides})


@dataclass(frozen=True)
class Profiles(Generic[C]):
    """A work step's profiles: ``table`` maps each profile name to its fields that differ from ``config``'s
    defaults; ``what`` is the word of the error lines ("student" -> "colour: not a student config field")."""

    what: str
    config: type[C]
    table: Mapping[str, Mapping[str, Any]]
    error: type[Exception] = field(default=ProfileError)

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config):
            raise TypeError(f"Profiles({self.what!r}): config must be a dataclass, got {self.config!r}")
        for name, row in self.table.items():  # a typo in a table fails at import, naming the profile
            try:
                _check_fields(self.config, self.what, ProfileError, row)
            except ProfileError as e:
                raise ProfileError(f"{self.what} profile {name}: {e}") from None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.table)

    def _row(self, profile: str) -> Mapping[str, Any]:
        if profile not in self.table:
            raise self.error(f"profile: {profile!r} is not one of {', '.join(self.table)}")
        return self.table[profile]

    def resolve(self, profile: str, **overrides: Any) -> C:
        """The profile's config with ``overrides`` on top; an unknown profile or field or a value of the wrong type
        raises ``error`` in one line naming it."""
        row = self._row(profile)
        _check_fields(self.config, self.what, self.error, overrides)
        return _build(self.config, self.error, self.what, {**row, **overrides})

    def parse(self, profile: str, pairs: Sequence[str], **overrides: Any) -> C:
        """``resolve`` with command-line ``FIELD=VALUE`` strings, each parsed as its field's type (bool: true/false,
        1/0, yes/no, on/off; a tuple: comma-separated; an optional field: none), applied after ``overrides``."""
        self._row(profile)
        hints = _hints(self.config)
        parsed = dict(overrides)
        for pair in pairs:
            name, eq, text = pair.partition("=")
            name = name.strip()
            if not eq:
                raise self.error(f"{pair!r}: not FIELD=VALUE")
            if name not in hints:
                raise self.error(f"{name}: not a {self.what} config field (known: {', '.join(sorted(hints))})")
            try:
                parsed[name] = parse_value(text, hints[name])
            except ValueError:
                raise self.error(f"{name}: {text!r} is not {_article(_type_name(hints[name]))}") from None
        return self.resolve(profile, **parsed)

    def configs(self) -> dict[str, C]:
        """Every profile's config, by name."""
        return {name: self.resolve(name) for name in self.table}


__all__ = ["ProfileError", "Profiles", "conforms", "given", "override", "parse_value"]
