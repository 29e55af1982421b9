"""A cold read from a server's SSD into its DRAM cache: what both an engine that loads
its own checkpoint (`calibration.validate.instance_process`) and a server's checkpoint
store (`calibration.validate.store_process`) do with a checkpoint found on SSD, or first
downloaded there from the remote store, and how `calibration.measure` installs the copy
whose take it times.

The blob is evicted from the page cache first, so the read is really cold, and read with
the real loader straight into a new file of the DRAM cache directory, which is published
atomically once the caller is done with it: the checkpoint is installed in DRAM on its
way, as the simulator assumes.
"""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from calibration.checkpoint.buffers import file_buffer
from calibration.checkpoint.format import BLOB_NAME, INDEX_NAME
from calibration.checkpoint.pagecache import make_cold
from calibration.checkpoint.reader import buffer_bytes, load
from thaw_kernel.publish import staged_directory


@contextmanager
def read_into_dram(checkpoint: Path, install: Path) -> Iterator[dict[str, torch.Tensor]]:
    """The checkpoint at `checkpoint` read cold into a new DRAM cache copy at `install`,
    its tensors views of that copy; published when the block ends."""
    make_cold(str(checkpoint / BLOB_NAME))
    with staged_directory(install, "installed checkpoint") as staging:
        shutil.copyfile(checkpoint / INDEX_NAME, staging / INDEX_NAME)
        yield load(checkpoint, out=file_buffer(staging / BLOB_NAME, buffer_bytes(checkpoint)))
