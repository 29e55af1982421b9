"""Reading the files a user names: configs, profiles, sweep files, indexes, traces
(`thaw_kernel.toml_file` reads TOML through it).

A user may name anything: a directory, a FIFO (reading it hangs), `/dev/zero` (reading it
never ends), a file of gigabytes where kilobytes belong, text in another encoding, JSON
nested a million deep. Each is refused here in one line naming the file, before any of
it is read, rather than hanging or tracing back later. Text may start with the UTF-8
byte-order mark that spreadsheet and Windows editors write.
"""

import json
import os
import stat
from pathlib import Path
from typing import Any

from thaw_kernel.bounds import TEXT_FILE_BYTES
from thaw_kernel.errors import InputError

BOM = "\ufeff"


def check_regular_file(path: Path, error: type[InputError] = InputError) -> None:
    """Refuse a path that is not a regular file (missing, a directory, a FIFO, a device),
    saying which it is."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror}") from None
    except ValueError:  # a name no file can have: a NUL byte in it
        raise error(f"{str(path)!r}: not a file name (it holds a NUL byte)") from None
    if stat.S_ISDIR(mode):
        raise error(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise error(f"{path}: not a regular file (a FIFO, socket or device); give a file")


def read_bytes(
    path: Path, limit: int = TEXT_FILE_BYTES, error: type[InputError] = InputError
) -> bytes:
    """The bytes of the regular file `path`, refused if it holds more than `limit`."""
    check_regular_file(path, error)
    try:
        # O_NONBLOCK: if `path` became a FIFO since the check, opening it does not hang.
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise error(f"{path}: not a regular file")
        with os.fdopen(handle, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror}") from None
    finally:
        os.close(handle)
    if len(data) > limit:
        raise error(f"{path}: larger than {limit} bytes; this is not a file of this kind")
    return data


def read_text(
    path: Path, limit: int = TEXT_FILE_BYTES, error: type[InputError] = InputError
) -> str:
    """The UTF-8 text of `path` (a leading byte-order mark dropped)."""
    data = read_bytes(path, limit, error)
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as err:
        raise error(
            f"{path}: not UTF-8 text (byte {err.start} is {data[err.start]:#04x})"
        ) from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table = dict(pairs)
    if len(table) < len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"duplicate key {duplicate!r}")
    return table


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str) -> Any:
    """Strict JSON: no duplicate keys, no NaN or Infinity; ValueError names the problem."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_json(
    path: Path, error: type[InputError] = InputError, limit: int = TEXT_FILE_BYTES
) -> Any:
    """The strict JSON document in `path`."""
    text = read_text(path, limit, error)
    try:
        return parse_json(text)
    except ValueError as err:
        raise error(f"{path}: invalid JSON: {err}") from None
