"""What every reproduction's figure shares: pyplot with a backend that draws to files,
never to a window (set before pyplot is imported: import `plt` from here), and the save."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; set before pyplot is imported
import matplotlib.pyplot as plt
from matplotlib.figure import Figure


def save(fig: Figure, path: Path) -> None:
    """Lay `fig` out, write it to `path`, and free it."""
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
