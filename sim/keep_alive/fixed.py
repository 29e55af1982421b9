"""`fixed[:SECONDS]`: every idle instance stays warm the same time, then stops.

The baseline of Shahrad et al., "Serverless in the Wild" (USENIX ATC '20), as FaaS
platforms use it, and thaw's default: SECONDS defaults to the cluster's
`keep_alive_s`, so `fixed` alone reproduces the runs made before keep-alive was a policy.
Under GPU pressure the longest-idle instance of the chosen server stops first.
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sim.keep_alive.base import Idle, KeepAlive, register
from sim.keep_alive.params import number
from thaw_kernel import bounds

if TYPE_CHECKING:
    from sim.model.instance import Instance


@register("fixed")
class Fixed(KeepAlive):
    @classmethod
    def parse(cls, params: str) -> dict[str, float]:
        return {"seconds": number(params, "fixed", 0.0, bounds.SECONDS)} if params else {}

    def __init__(self, values: Mapping[str, float], keep_alive_s: float) -> None:
        self._idle = Idle(values.get("seconds", keep_alive_s))

    def idle(self, instance: "Instance", now: float) -> Idle:
        return self._idle
