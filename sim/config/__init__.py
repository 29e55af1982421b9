"""Reading a run's configuration: the cluster TOML laid over the defaults (`cluster`),
its value parsers (`fields`), engines (`engines`) and sleep tables (`sleep`), the
hardware profile (`profile`), and the overrides of the command line and `sim.run`
(`overrides`). Everything it makes is a frozen value of `sim.spec`.

`read_config` and the spec classes are re-exported here, where earlier versions had them.
"""

from sim.config.cluster import read_config
from sim.config.overrides import with_keep_alive, with_queue
from sim.spec import ClusterConfig, MigrationSpec, ModelSpec, ServerGroup

__all__ = [
    "ClusterConfig",
    "MigrationSpec",
    "ModelSpec",
    "ServerGroup",
    "read_config",
    "with_keep_alive",
    "with_queue",
]
