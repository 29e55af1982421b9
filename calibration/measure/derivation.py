"""From raw measurements to the derived parameters the simulator runs on.

Each derived number is one measured figure, or the simulator's own cost model fitted to
measured points (`calibration.measure.linear_fit`), so that it predicts the measured times as
well as that model can (sim/config/profile.py documents the fields):

- `ssd_read_bytes_per_s`: the real loader, cold, from the measured disk to the device;
  on the CPU, where the disk readers ran, one reader's rate (`disk_readers_1`): a process
  of its own loading into a fresh /dev/shm file is what an instance's cold SSD load is
  (into its DRAM cache on the way), and the measuring process's loader into a buffer it
  reuses is not (docs/calibration.md gives the figures: the one reader matched the
  replayed engines' loads, the measuring process's loader missed them either way);
- `dram_to_gpu_bytes_per_s`: the real loader in a fresh process taking a checkpoint
  held in a DRAM cache file onto the device, as an engine does
  (`calibration.measure.take_probe`); the measuring process's warm loader
  (`loader_warm`), reading into memory it touched before, ran about 1.8 times as fast
  on the project's VM;
- `instance_startup_s`: a fresh process importing torch and creating its context;
- `startup_cpu_s`: the CPU-seconds that process spent until then (its own clock), at
  most its wall time;
- `host_cores`: the cores whose fluid model best explains start-ups stretching, begun
  together and beside a load from SSD (`calibration.measure.host_cores`), given the
  slowdown below;
- `startup_company_slowdown`, only with `--remote-rate`: how much a start-up's CPU-bound
  part stretched beside a download, which asks a fraction of a core: on a host whose
  cores share caches, memory bandwidth or SMT siblings, any company slows a start-up
  before the cores run out, which core sharing alone cannot express. From the median
  start-up beside a download over the median of start-ups alone taking turns with them,
  so that drift moves both alike;
- `warmup_s`: after the load, building the model and its first pass's one-time costs,
  in a fresh process (`calibration.measure.warmup_probe`);
- `decode_step_s`, `decode_step_per_request_s`: the decode step at batch 1, and the
  slope of the line through it that fits the other batch sizes best;
- `prefill_fixed_s`, `recompute_tokens_per_s`: a prefill pass reads every weight once,
  as a decode step does, whatever its tokens, and then computes on each token: its
  fixed part is the decode step at batch 1, and the rate is the one that fits best what
  the measured prefills took beyond it (the simulator's prefill takes
  `fixed + tokens / rate`, both scaled by a model's size as the decode step is). On the
  project's VM, a rate fitted through the origin on a reference model of 14 MB, whose
  weights the caches hold, priced a 48-token prefill of a 130 MB decoder at 23 ms
  against 41 ms measured (`calibration.validate`'s `inference_speeds`);
- `migration_fixed_s`: what a stop-and-copy round costs beyond recomputing its tokens
  at that rate (the simulator's round is `fixed + tokens / rate` plus the tokens'
  bytes over the network, which on one machine is a pipe), fitted in relative terms:
  the fixed cost matters most in the short final round, the pause a request sees;
- `migration_per_token_s`: the slope of a free line through the rounds, for the record
  (the simulator derives its own from the network and the rate).

- `host_disk_bytes_per_s`: the one disk that a host's concurrent loads share, from
  1, 2 and 4 processes loading their own cold copies at once
  (`calibration.measure.disk_readers`). The simulator shares it as a fluid link: k
  readers, each capped at the one-reader rate R1, get `min(k * R1, C)` together. Each
  measured aggregate is thus at most C, and noise only slows a round, so C is the larger
  of the 2- and 4-reader medians (1 reader is R1's, not C's); the notes give the whole
  curve, and say where 4 readers got less than 2 (a disk that loses throughput to
  contention, which one C overstates) or clearly more (2 did not saturate it; 4 may not
  either, and C is then a lower bound), and where one reader in a process of its own
  read at a rate a quarter off the loader's cold one, which the same load should match;
- `load_cpu_s_per_byte`: the CPU-seconds per byte one reader's cold load took (its
  page faults, copies and checksums), which the simulator charges to the host's cores
  beside the start-ups;
- `download_cpu_s_per_byte`, only with `--remote-rate`: the same for a download, the
  client's and the loopback store's CPU together (on one box both share its cores);
- `ssd_delete_s_per_byte`: the seconds per byte that deleting a synced copy of the
  readers' checkpoint took (`calibration.measure.delete_probe`), which the simulator
  charges to the disk at each eviction from an SSD;
- `network_bytes_per_s`, only with `--remote-rate`: the goodput of the real client's
  downloads through the loopback store paced to that rate per server
  (`calibration.measure.remote_probe`). One box has no network of its own to measure;
  without the option the profile has no network, and the cluster keeps its own figure.

What the numbers could not say honestly (a fit that noise bent below zero, recompute no
faster than decode) goes into the notes, not under the rug.
"""

from calibration.measure.host_cores import Stretch, at_once, fit_host_cores
from calibration.measure.linear_fit import (
    Line,
    Points,
    fit_intercept,
    fit_line,
    fit_through,
    fit_through_origin,
)
from calibration.measure.measurement import Measurement
from calibration.measure.plausibility import ImpossibleProfile
from calibration.measure.startup_probe import BESIDE_DOWNLOAD, BESIDE_LOAD, BETWEEN_DOWNLOADS
from calibration.measure.take_probe import TAKE


def derive(
    measurements: dict[str, Measurement],
    decode: Points,
    prefill: Points,
    migration: Points,
    model_bytes: int,
    *,
    cpus: int,
    device: str = "cpu",
) -> tuple[dict[str, float], list[str], dict[str, Line]]:
    """The derived parameters, the notes that qualify them, and the fitted lines.

    `cpus`: the cores the OS reports, what `host_cores` takes when no start-ups at once
    stretched; `device`: the kind the loads went to ("cpu" or a CUDA device).

    `decode`: step seconds by batch size, batch 1 first; `prefill`: seconds by prompt
    length; `migration`: stop-and-copy round seconds by tokens moved.
    """
    if decode.x[0] != 1:
        raise ValueError("the decode points must begin at batch 1")
    pass_s = decode.y[0]  # what a pass costs whatever its tokens: reading every weight
    fits = {
        "decode": fit_through(decode, 1.0, pass_s),
        "prefill": fit_through_origin(Points(prefill.x, tuple(y - pass_s for y in prefill.y))),
        "migration_free": fit_line(migration),
    }
    for name in ("prefill", "migration_free"):
        if fits[name].slope <= 0:
            raise ImpossibleProfile(f"{name} time did not grow with the tokens: timings too noisy")
    rate = 1 / fits["prefill"].slope
    fits["migration"] = fit_intercept(migration, fits["prefill"].slope)
    notes = []
    derived = {
        "ssd_read_bytes_per_s": _ssd_read(measurements, device),
        "dram_to_gpu_bytes_per_s": measurements[TAKE].median,
        "instance_startup_s": measurements["instance_startup"].median,
        "reference_model_bytes": float(model_bytes),
        "decode_step_s": decode.y[0],
        "decode_step_per_request_s": _at_least_zero(
            fits["decode"].slope, "decode_step_per_request_s", notes
        ),
        "recompute_tokens_per_s": rate,
        "prefill_fixed_s": pass_s,
        "migration_fixed_s": _at_least_zero(
            fits["migration"].intercept, "migration_fixed_s", notes
        ),
        "migration_per_token_s": fits["migration_free"].slope,
    }
    if rate <= 1 / decode.y[0]:
        notes.append(
            f"recompute ({rate:.0f} tokens/s) is not faster than decode "
            f"({1 / decode.y[0]:.0f} tokens/s) on this hardware: the design expects it to "
            "be, and token migration gains less here"
        )
    alone = measurements["instance_startup"].median
    cpu = measurements["instance_startup_cpu"].median
    if cpu > alone:
        notes.append(
            f"the start-up spent {cpu:.2f} CPU-seconds in {alone:.2f} s (more than one thread): "
            "startup_cpu_s is recorded as its wall time"
        )
        cpu = alone
    derived |= _host_disk(measurements, notes)
    if "remote_download" in measurements:
        derived["network_bytes_per_s"] = measurements["remote_download"].median
    for name, key in (("reader_load_cpu", "load"), ("remote_download_cpu", "download")):
        if name in measurements:
            derived[f"{key}_cpu_s_per_byte"] = measurements[name].median
    if "ssd_delete" in measurements:
        derived["ssd_delete_s_per_byte"] = measurements["ssd_delete"].median
    derived["startup_cpu_s"] = cpu
    derived |= _company_slowdown(measurements, derived, alone, cpu, cpus, notes)
    derived["host_cores"] = fit_host_cores(
        alone,
        cpu,
        _stretches(measurements, derived),
        cpus,
        derived.get("startup_company_slowdown", 0.0),
    )
    derived["warmup_s"] = measurements["instance_warmup"].median
    rates = [length / seconds for length, seconds in zip(prefill.x, prefill.y, strict=True)]
    notes.append(
        f"prefill ran at {min(rates):.0f}-{max(rates):.0f} tokens/s over prompts of "
        f"{min(prefill.x):.0f}-{max(prefill.x):.0f} tokens (attention costs more per token "
        "in long prompts, fixed costs more in short ones); recompute_tokens_per_s is the "
        "rate that fits them best"
    )
    return derived, notes, fits


def _stretches(measurements: dict[str, Measurement], derived: dict[str, float]) -> list[Stretch]:
    """The start-ups measured beside other CPU flows: at once, and beside a load from SSD
    (whose CPU flow is capped as the simulator caps it: its CPU per byte at its bytes'
    rate, here the one reader's, alone on the disk), where both were measured."""
    stretches = [
        at_once(int(name.removeprefix("instance_startup_x")), m.median)
        for name, m in measurements.items()
        if name.startswith("instance_startup_x")
    ]
    if BESIDE_LOAD in measurements and "load_cpu_s_per_byte" in derived:
        load = derived["load_cpu_s_per_byte"] * derived["ssd_read_bytes_per_s"]
        stretches.append(Stretch(measurements[BESIDE_LOAD].median, (load,)))
    return stretches


def _company_slowdown(
    measurements: dict[str, Measurement],
    derived: dict[str, float],
    alone_s: float,
    cpu_s: float,
    cpus: int,
    notes: list[str],
) -> dict[str, float]:
    """`startup_company_slowdown`, where a start-up was timed beside a download: what its
    CPU-bound part stretched by, the download asking too little of the cores for their
    sharing to explain any of it (the module's docstring says why)."""
    if BESIDE_DOWNLOAD not in measurements or cpu_s <= 0:
        return {}
    stretch = measurements[BESIDE_DOWNLOAD].median / measurements[BETWEEN_DOWNLOADS].median
    slowdown = max(0.0, (stretch - 1) * alone_s / cpu_s)
    asked = derived.get("download_cpu_s_per_byte", 0.0) * derived["network_bytes_per_s"]
    notes.append(
        f"a start-up beside a download ({asked:.2f} cores) took {stretch:.3f}x its time "
        f"alone: startup_company_slowdown {slowdown:.3f}"
    )
    if 1 + asked > cpus:
        notes.append(
            "the start-up and the download asked more than the cores the OS reports: part "
            "of that stretch is their sharing, and startup_company_slowdown overstates it"
        )
    return {"startup_company_slowdown": slowdown}


def _at_least_zero(value: float, name: str, notes: list[str]) -> float:
    """`value`, or 0 with a note where noise bent a fit below zero."""
    if value >= 0:
        return value
    notes.append(f"{name}: the fit gave {value:.3g} s (noise); recorded as 0")
    return 0.0


def _ssd_read(measurements: dict[str, Measurement], device: str) -> float:
    """A cold load's rate from SSD, as an instance's load on `device` runs (the module's
    docstring says which figure that is)."""
    if device == "cpu" and "disk_readers_1" in measurements:
        return measurements["disk_readers_1"].median
    return measurements["loader_cold"].median


def _host_disk(measurements: dict[str, Measurement], notes: list[str]) -> dict[str, float]:
    """`host_disk_bytes_per_s` from the concurrent readers (the module's docstring says
    how), with the curve in the notes; nothing where they were not measured."""
    medians = {
        k: measurements[f"disk_readers_{k}"].median
        for k in (1, 2, 4)
        if f"disk_readers_{k}" in measurements
    }
    if 2 not in medians or 4 not in medians:
        return {}
    alone, loader = medians.get(1), measurements["loader_cold"].median
    if alone is not None and not 0.8 <= alone / loader <= 1.25:
        notes.append(
            f"one reader in a process of its own read {alone / 1e9:.2f} GB/s (disk_readers_1), "
            f"the loader in the measuring process {loader / 1e9:.2f} (loader_cold, into a "
            "buffer it reuses): where the bytes land moves a load's rate this much "
            "(on a virtual machine, the guest pages behind the buffer read into)"
        )
    curve = ", ".join(f"{k}: {rate / 1e9:.2f}" for k, rate in sorted(medians.items()))
    notes.append(
        f"host_disk_bytes_per_s is the larger of the 2- and 4-reader aggregates; readers at "
        f"once, aggregate GB/s (medians): {curve}"
    )
    if medians[4] < 0.9 * medians[2]:
        notes.append(
            "4 readers at once got less than 2: the disk loses throughput to contention, "
            "and one shared capacity overstates what 4 loads get"
        )
    elif medians[4] > 1.1 * medians[2]:
        notes.append(
            "4 readers at once got more than 2: 2 did not saturate the disk, and 4 may not "
            "have: host_disk_bytes_per_s is a lower bound"
        )
    return {"host_disk_bytes_per_s": max(medians[2], medians[4])}
