"""Each replay model's inference speed, measured here, beside what the simulator derives.

The simulator scales the profile's reference model by weights: a decode step's time
grows with them, the prefill rate falls with them. On a CPU a small model's step is
partly fixed overhead, so a reference of another size misjudges models of this one;
measured with the profile's own probes (`calibration.measure.inference_probe`), on one thread as
the replay's instances run, this says by how much.
"""

import torch

from calibration.measure.inference_probe import measure_decode, measure_prefill
from calibration.migration.model import Transformer
from calibration.validate.scenario import MODELS, Scenario
from sim.spec import ClusterConfig

PROMPT = 48  # tokens: the replay's mean prompt
STEPS = 10
PREFILLS = 5


def compare_speeds(
    scenario: Scenario, config: ClusterConfig, device: str
) -> dict[str, dict[str, float]]:
    """Per model, on the replay's `device`: real and simulated decode step (batch 1 and
    full) and prefill time."""
    torch.set_num_threads(1)
    batches = (1, scenario.max_batch)
    out = {}
    for seed, (name, model_config) in enumerate(MODELS.items()):
        model = Transformer.random(model_config, seed, device)
        _, decode = measure_decode(model, batches, STEPS)
        _, prefill = measure_prefill(model, (PROMPT,), PREFILLS)
        spec = config.models[name]
        out[name] = {
            "weights_bytes": spec.weights,
            "decode_step_s_real": decode.y[0],
            "decode_step_s_sim": spec.decode_step(1),
            f"decode_step_batch_{batches[1]}_s_real": decode.y[1],
            f"decode_step_batch_{batches[1]}_s_sim": spec.decode_step(batches[1]),
            f"prefill_{PROMPT}_s_real": prefill.y[0],
            f"prefill_{PROMPT}_s_sim": spec.prefill_s(PROMPT),
        }
    return out
