"""Where a validation's `--out` directory keeps each replay's tables."""


def replay_folder(seed: int, replay: int) -> str:
    """`seed-N` for the first replay of a trace, `seed-N/replay-K` for the K-th after it."""
    return f"seed-{seed}" if replay == 0 else f"seed-{seed}/replay-{replay}"
