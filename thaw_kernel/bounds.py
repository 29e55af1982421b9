"""Every upper (and lower) bound thaw puts on a size, count or quantity a user gives it.

Inputs beyond these are refused as bad input, naming the key, before anything is
allocated: a cluster of 10^9 servers or a duration of 1e308 s is a typing slip or an
attack, and would otherwise exhaust memory, hang, or overflow the simulated clock. Each
bound is far beyond what a real study needs; the comment beside it says why.
"""

KiB, MiB, GiB = 2**10, 2**20, 2**30

# --- files ---
# A cluster TOML, sweep file or hardware profile is a few KiB; one of a 100,000-model
# catalog is a few MiB.
TEXT_FILE_BYTES = 64 * MiB
# A checkpoint index spends ~200 bytes per tensor: this holds a million tensors, ten times
# the largest mixture-of-experts checkpoints.
INDEX_FILE_BYTES = 1 * GiB
# One CSV field: the longest real one (a Functions 2019 hash) is 64 characters.
FIELD_CHARS = 4 * KiB

# --- the cluster ---
# The largest GPU clusters have ~100,000 GPUs in ~12,500 servers. The simulator keeps ~2
# KiB per server: `python -m sim run --max-requests 10` on 100,000 servers takes 360 MB and
# 6 s on the project's 2-core VM (10^6 servers: 2.3 GB, 39 s).
SERVERS = 100_000
GPUS_PER_SERVER = 1024  # machines hold 8-16 GPUs; rack-scale systems 72
MODELS = 1_000_000  # catalogs of a few hundred models; Functions traces name ~50,000 apps
HOST_CORES = 1_000_000  # servers have 32-384 cores; a host with a million is a slip
HOST_CORES_MIN = 0.01  # effective cores may be fractional; a hundredth of one is a slip
# A load's CPU per GB: a core copies and sums several GB/s, so a small VM's load takes
# about a CPU-second a GB (docs/calibration.md); a thousand is a slip.
CPU_S_PER_GB = 1000.0
# A deletion's hold on the disk per GB: a discarding file system took 0.12-0.19 s a GB on
# the project's VM (docs/calibration.md); a hundred is a slip.
DELETE_S_PER_GB = 100.0
# A start-up's slowdown beside other CPU work, below saturation: shared caches and SMT
# siblings cost a few to tens of percent (docs/model.md); ten times slower is a slip.
COMPANY_SLOWDOWN = 10.0
MAX_BATCH = 2**20  # serving engines batch hundreds of requests, not a million
LAYERS = 100_000  # transformers have 24-128 layers
MIGRATION_ROUNDS = 1_000_000  # ServerlessLLM's migrations converge in a handful of rounds
BYTES = 2**60  # sizes (GPU memory, DRAM, SSD, weights) up to 1 EiB, per server or model
# Bandwidths from 1 kB/s (a dial-up modem) to 1 EB/s (a million times NVLink).
BANDWIDTH_MIN = 1e3
BANDWIDTH_MAX = 1e18
ZIPF = 100.0  # popularity exponents fitted to real workloads lie between 0.5 and 2
# Rates of tokens per second: from one per day to a trillion.
TOKEN_RATE_MIN = 1e-5
TOKEN_RATE_MAX = 1e12

# --- time (seconds) ---
# Simulated times and durations up to ~317 years (Unix epoch stamps in seconds pass), and
# the clock's float still resolves 2 microseconds there.
SECONDS = 1e10
# The smallest positive duration (a decode step, a round's overhead): a nanosecond, a
# thousand times finer than any GPU kernel launch.
SECONDS_MIN = 1e-9

# --- traces ---
# Token counts per request: ten thousand times the longest context windows (10^7 tokens).
TOKENS = 10**11
# Other counts in trace rows (images, invocations per minute): far beyond real traces'
# maxima (Functions 2019's busiest minute has ~10^6 invocations), and small enough that
# their sums fit 64-bit integers.
COUNT = 10**12
# Requests in one trace after expansion (replication, per-minute counts): a day of Azure
# Functions 2019 at full rate; ~40 bytes a row, so ~8 GB of memory.
REQUESTS = 2 * 10**8
# --replicate copies per request, and --scale and --compress factors (and 1 / --compress):
# studies scale rates by 2-100x.
REPLICATE = 10**4
SCALE = 1e6
# Coefficients of variation of inter-arrival times and token lengths: bursty real traces
# reach ~10.
CV = 1000.0

# --- sweeps ---
SEEDS = 100_000  # a study averages over tens of seeds
SEED = 2**63 - 1  # a seed is a column of 64-bit integers in the result tables
GRID_POINTS = 1_000_000  # runs in one sweep: months of machine time at a second per run

# --- checkpoints ---
# Tensors start on a power-of-two boundary: O_DIRECT needs 4 KiB, the largest huge page
# is 1 GiB; beyond 64 MiB the padding outweighs any model's tensors.
ALIGNMENT = 64 * MiB
