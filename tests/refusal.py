"""thaw's promise on bad input, as one check: exit status 2, one line on stderr naming what
was wrong, no traceback, nothing on stdout, and no file under the user's folder created,
changed or removed."""

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

Main = Callable[[list[str]], int]


def tree(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root`` with its bytes, or its kind when it is not a regular file
    (a FIFO or a link to a device must not be read): what "nothing written, nothing lost"
    compares before and after a command."""
    return {str(path.relative_to(root)): _content(path) for path in sorted(root.rglob("*"))}


def _content(path: Path) -> bytes | str:
    if path.is_symlink():
        return f"link to {path.readlink()}"
    if path.is_file():
        return path.read_bytes()
    return "folder" if path.is_dir() else "special file"


def exit_status(main: Main, argv: Sequence[str]) -> int:
    """A command's exit status in-process: argparse's usage errors exit by raising."""
    try:
        return main(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1


def assert_one_line(status: int, out: str, err: str, *names: str, expected: int = 2) -> None:
    """The refusal itself: ``expected`` status, one stderr line holding every name."""
    assert status == expected, (status, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err and out == "", (out, err)
    for name in names:
        assert name in err, (name, err)


def refused(
    capsys: pytest.CaptureFixture[str],
    main: Main,
    argv: Sequence[str],
    *names: str,
    keeps: Path | None = None,
    expected: int = 2,
) -> str:
    """Run ``main(argv)`` and check it refused in one line naming each of ``names``,
    leaving everything under ``keeps`` as it was. Returns the line."""
    before = tree(keeps) if keeps is not None else None
    status = exit_status(main, argv)
    captured = capsys.readouterr()
    assert_one_line(status, captured.out, captured.err, *names, expected=expected)
    if keeps is not None:
        assert tree(keeps) == before, "a refused command changed the user's files"
    return captured.err
