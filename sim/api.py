"""thaw's Python API, where users import it from: `run` one trace on one cluster under
one policy and get its tables and summary back (`RunResult`). The code is
`sim.runner.api`; `read_config`, `with_queue` and `with_keep_alive` make the
configuration a run takes."""

from sim.config import read_config, with_keep_alive, with_queue
from sim.runner.api import RunResult, replay, run

__all__ = ["RunResult", "read_config", "replay", "run", "with_keep_alive", "with_queue"]
