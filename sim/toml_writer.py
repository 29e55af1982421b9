"""Write plain configuration dicts as TOML (the standard library only reads TOML)."""

import math
import re

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _string(text: str) -> str:
    """A TOML basic string: quote, backslash and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _emit(table: dict, path: list[str], lines: list[str]) -> None:
    for name, value in table.items():
        if not isinstance(value, dict) and not _is_table_array(value):
            lines.append(f"{_key(name)} = {_value(value)}")
    for name, value in table.items():
        sub = [*path, _key(name)]
        if isinstance(value, dict):
            if not value or not all(isinstance(v, dict) for v in value.values()):
                lines.extend(["", f"[{'.'.join(sub)}]"])
            _emit(value, sub, lines)
        elif _is_table_array(value):
            for item in value:
                lines.extend(["", f"[[{'.'.join(sub)}]]"])
                _emit(item, sub, lines)


def dumps(table: dict) -> str:
    """TOML text for a dict of scalars, lists, tables and arrays of tables."""
    lines: list[str] = []
    _emit(table, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"
