"""analysis/notebooks/compare_policies.ipynb runs end to end (on a short trace window)."""

import nbformat
import pytest
from nbclient import NotebookClient


@pytest.mark.slow
def test_the_compare_policies_notebook_executes(repo_root, tmp_path, monkeypatch):
    monkeypatch.setenv("THAW_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("THAW_NOTEBOOK_DIR", str(tmp_path))
    path = repo_root / "analysis" / "notebooks" / "compare_policies.ipynb"
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert not any(c.get("outputs") for c in code)  # stored without outputs
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3  # the three figures
    text = "".join(o.get("text", "") for o in outputs)
    assert "16 runs" in text and "x2: lowest p99" in text
    assert len(list((tmp_path / "sweep" / "runs").iterdir())) == 16
