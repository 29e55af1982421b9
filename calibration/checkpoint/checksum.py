"""The two per-tensor checksums: a fast additive one for every load, CRC-32 for `verify`.

`sum64` is the sum, modulo 2**64, of the tensor's bytes read as little-endian 64-bit
words, the last word zero-padded (the Internet checksum's idea, 64 bits wide). It runs at
memory speed (10-40 GB/s) and is additive, so reader threads can sum whatever chunks
they read, in any order, right after reading them: hidden behind the reads of a cold
load, about a third of a warm (page-cache) load's time. It catches any corruption
confined to one word, truncation, zeroed or garbage pages (a miss has probability
2**-64), but not words swapped within a tensor: `zlib.crc32` catches those, at about
2 GB/s on one core, which is why only `verify` pays it.
"""

import numpy as np

MASK64 = 2**64 - 1


def sum64(words: memoryview | np.ndarray) -> int:
    """The word sum of a buffer whose length is a multiple of 8."""
    return int(np.frombuffer(words, dtype="<u8").sum(dtype=np.uint64))


def padded_sum64(data: memoryview) -> int:
    """The word sum of any buffer, its last word zero-padded."""
    whole = len(data) - len(data) % 8
    tail = bytes(data[whole:]).ljust(8, b"\0") if whole < len(data) else b""
    return (sum64(data[:whole]) + (sum64(tail) if tail else 0)) & MASK64
