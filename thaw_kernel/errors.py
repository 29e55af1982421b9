"""The error for bad user input: the CLI prints its one-line message and exits 2."""


class InputError(Exception):
    """A file, key or value the user gave us is wrong; the message names it."""
