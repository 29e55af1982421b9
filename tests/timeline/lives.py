"""Each instance's rows tell one life: awake, asleep, woken, in turn."""

import itertools
import math

from sim.spec import ClusterConfig

from .records import EPS, Row


def check_lives(rows: list[Row], config: ClusterConfig) -> list[tuple[Row, bool]]:
    """Each instance's rows tell one life: it starts awake; an awake period ending `asleep`
    is followed by an asleep one from that instant, which, ending `woken`, is followed by an
    awake one from that instant; asleep rows hold no GPU, load nothing and belong to a
    model that sleeps; awake rows hold their model's GPUs and are ready before they end.
    Returns each awake row and whether it is a wake."""
    lives: dict[int, list[Row]] = {}
    for row in rows:
        lives.setdefault(row.instance, []).append(row)
    awake = []
    for life in lives.values():
        life.sort(key=lambda r: r.allocated_s)  # stable: ties in the log's order
        assert not life[0].asleep, "an instance's life begins asleep"
        for before, row in itertools.pairwise(life):
            assert row.allocated_s == before.ended_s, "a gap or an overlap in an instance's life"
            assert row.asleep != before.asleep
            assert before.end == ("asleep" if row.asleep else "woken"), f"after {before.end}"
        for k, row in enumerate(life):
            if row.asleep:
                _check_asleep(row, config)
            else:
                _check_awake(row, config)
                awake.append((row, k > 0))
    return awake


def _check_asleep(row: Row, config: ClusterConfig) -> None:
    assert config.sleep_of(row.model) is not None, f"{row.model} slept without a sleep table"
    assert row.gpus == 0, "an engine asleep holds GPUs"
    assert math.isnan(row.ready_s) and math.isnan(row.load_s), "an engine asleep loaded"
    assert row.end in ("woken", "expired", "running")


def _check_awake(row: Row, config: ClusterConfig) -> None:
    assert row.gpus == config.models[row.model].gpus, "an instance holds the wrong GPUs"
    if math.isnan(row.ready_s):
        assert row.end == "running", "an instance ended before it was ready"
        return
    assert row.allocated_s <= row.ready_s + EPS <= row.ended_s + 2 * EPS, "ready out of order"
