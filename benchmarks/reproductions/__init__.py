"""Reproductions of published results, each in its paper's own setting
(`benchmarks/reproduce.py` runs them): a name, and the module that runs it."""

from reproductions import (
    blitzscale,
    faascache,
    lambdascale,
    medusa,
    serverlessllm,
    shahrad,
    vllm_sleep,
)
from reproductions.verdict import Reproduction

REPRODUCTIONS: dict[str, Reproduction] = {
    "blitzscale": blitzscale.REPRODUCTION,
    "faascache": faascache.REPRODUCTION,
    "lambdascale": lambdascale.REPRODUCTION,
    "medusa": medusa.REPRODUCTION,
    "serverlessllm": serverlessllm.REPRODUCTION,
    "shahrad": shahrad.REPRODUCTION,
    "vllm-sleep": vllm_sleep.REPRODUCTION,
}
