"""benchmarks/gpu_session.sh on the CPU: the dry-run of the steps a GPU machine runs.

A GPU machine is lent for minutes, so its one run must not die on a typo: the dry-run
goes through every step here, and these tests read back what it left under --out.
"""

import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from sim.config import profile

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_session.sh"
STEPS = ("setup", "env", "cuda-tests", "loader", "measure")


def session(*args: str) -> subprocess.CompletedProcess:
    """The script, finding this interpreter as `python3` (its candidate after a .venv)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=REPO,
        env=os.environ | {"PATH": path},
        capture_output=True,
        text=True,
    )


def statuses(out: Path) -> dict[str, list[str]]:
    """Each step's line of summary.txt, split into words, by step."""
    lines = (out / "summary.txt").read_text().splitlines()
    return {line.split()[0]: line.split() for line in lines if line.split()[:1] != []}


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("gpu-session")
    return session("--device", "cpu", "--out", str(out)), out


@pytest.mark.slow
def test_the_dry_run_reports_every_step_ok(dry_run):
    result, out = dry_run
    assert result.returncode == 0, result.stdout + result.stderr
    steps = statuses(out)
    for step in STEPS:
        assert steps[step][1] == "ok", steps[step]
        assert (out / steps[step][3]).is_file()  # its output, kept
    assert steps["migration"][1] == "covered"
    assert steps["tiers"][1] == "skipped"  # on cuda only
    assert f"total: {len(STEPS)} of {len(STEPS)} steps ok" in (out / "summary.txt").read_text()
    scratch = Path(steps["env"][-1].rstrip(")"))
    assert scratch.name.startswith("thaw-gpu-session-") and not scratch.exists()  # removed
    assert not list(out.glob("*.part"))


@pytest.mark.slow
def test_the_dry_run_writes_a_profile_the_simulator_reads(dry_run):
    _, out = dry_run
    derived, _ = profile.read_profile(out / "profile-cpu.json")
    assert derived["ssd_read_bytes_per_s"] > 0 and derived["migration_per_token_s"] > 0
    machine = json.loads((out / "profile-cpu.json").read_text())["machine"]
    assert "gpu_session.sh" in machine["description"]


@pytest.mark.slow
def test_the_loader_benchmark_puts_every_loader_beside_the_device_and_the_copy_ceiling(
    dry_run,
):
    _, out = dry_run
    result = json.loads((out / "loader.json").read_text())
    assert result["device"] == "cpu" and result["bit_identical"] is True
    for loader in ("raw", "thaw", "safetensors", "torch_load"):
        assert result[f"{loader}_cold_gbps"] > 0
    for loader in ("thaw", "safetensors", "torch_load", "thaw_buffered"):
        assert result[f"{loader}_warm_gbps"] > 0
    assert set(result["copy_gbps"]) == {"pageable_one_copy", "pageable_per_tensor"}
    assert result["copy_ceiling_gbps"] == max(result["copy_gbps"].values())


@pytest.mark.slow
def test_without_a_gpu_the_cuda_tests_are_collected_and_skip(dry_run):
    _, out = dry_run
    suite = ET.parse(out / "cuda-tests.xml").getroot().find("testsuite")
    assert int(suite.get("tests")) >= 4  # the loader's, measure's and migration's
    assert suite.get("skipped") == suite.get("tests")
    assert suite.get("failures") == suite.get("errors") == "0"
    assert "torch.cuda.is_available(): False" in (out / "env.txt").read_text()


def tmpfs(path: str) -> bool:
    with open("/proc/mounts", encoding="utf-8") as mounts:
        return any(line.split()[1:3] == [path, "tmpfs"] for line in mounts)


@pytest.mark.slow
@pytest.mark.skipif(not tmpfs("/dev/shm"), reason="no tmpfs at /dev/shm here")
def test_a_failed_step_does_not_stop_the_next(tmp_path):
    """Scratch on tmpfs: the loader and measure refuse it; the tests still run after."""
    out = tmp_path / "out"
    scratch = Path(tempfile.mkdtemp(prefix="thaw-test-", dir="/dev/shm"))
    try:
        result = session("--device", "cpu", "--out", str(out), "--scratch", str(scratch))
    finally:
        scratch.rmdir()  # the script removed what it made in it
    assert result.returncode == 1
    steps = statuses(out)
    assert [steps[step][1] for step in STEPS] == [
        "ok",
        "failed(rc=1)",
        "ok",
        "failed(rc=1)",
        "failed(rc=2)",
    ]
    assert "still in the page cache" in (out / "loader.log").read_text()
    assert not (out / "loader.json").exists() and not list(out.glob("*.part"))
    assert "total: 2 of 5 steps ok" in (out / "summary.txt").read_text()


@pytest.mark.slow
def test_steps_runs_only_those_named_after_setup_and_env_in_their_order(tmp_path):
    out = tmp_path / "out"
    result = session("--device", "cpu", "--out", str(out), "--steps", "cuda-tests")
    assert result.returncode == 0, result.stdout + result.stderr
    steps = statuses(out)
    order = list(steps)
    # What a lent machine is for comes first: the CUDA tests, then the tiers validation.
    assert order[order.index("setup") : order.index("total:")] == [
        "setup",
        "env",
        "cuda-tests",
        "tiers",
        "measure",
        "migration",
        "loader",
    ]
    assert [steps[step][1] for step in ("setup", "env", "cuda-tests")] == ["ok"] * 3
    for step in ("measure", "loader"):
        assert steps[step][1:] == ["skipped", "-", "not", "in", "--steps"]
    assert "cuda-tests alone" in " ".join(steps["migration"])
    assert "total: 3 of 3 steps ok" in (out / "summary.txt").read_text()
    assert not list(out.glob("profile-*.json")) and not (out / "loader.json").exists()


def probe_wheel(directory: Path) -> Path:
    """A wheel of one module, `thaw_wheel_probe`, built by hand: what a machine with no
    package index gets carried."""
    name = "thaw_wheel_probe"
    info = f"{name}-0.1.dist-info"
    files = {
        f"{name}/__init__.py": "PROBE = 1\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: thaw-wheel-probe\nVersion: 0.1\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: thaw-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = ""
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += f"{path},sha256={digest.decode()},{len(text.encode())}\n"
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    wheel = directory / f"{name}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def members(archive: Path) -> dict[str, str]:
    """Each text file in a .tgz, by name."""
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}


@pytest.mark.slow
def test_pack_gives_back_an_archive_a_step_and_wheels_install_before_setup(tmp_path):
    """A lent machine returns a few files and may have no package index: with --pack each
    step's output is one archive, and the carried wheels import in the steps."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    probe_wheel(wheels)
    out = tmp_path / "out"
    args = ("--device", "cpu", "--out", str(out), "--steps", "cuda-tests", "--pack")
    result = session(*args, "--wheels", str(wheels))
    assert result.returncode == 0, result.stdout + result.stderr
    files = {path.name for path in out.iterdir()}
    assert files == {"summary.txt", "setup.tgz", "env.tgz", "cuda-tests.tgz"}  # 8 at most
    steps = statuses(out)
    assert [steps[step][3] for step in ("setup", "env", "cuda-tests")] == [
        "setup.tgz",
        "env.tgz",
        "cuda-tests.tgz",
    ]
    assert set(members(out / "cuda-tests.tgz")) == {"cuda-tests.log", "cuda-tests.xml"}
    assert f"installing the wheels in {wheels}" in members(out / "setup.tgz")["setup.log"]
    env = members(out / "env.tgz")["env.txt"]
    assert "thaw_wheel_probe: " in env and "/site/thaw_wheel_probe/__init__.py" in env

    (wheels / "broken.whl").write_text("not a zip")
    broken = session(*args, "--wheels", str(wheels), "--out", str(tmp_path / "broken"))
    assert broken.returncode == 1
    assert "install failed: the wheels in" in " ".join(statuses(tmp_path / "broken")["setup"])


def test_bad_arguments_are_one_line_and_leave_nothing(tmp_path):
    (tmp_path / "no-wheels").mkdir()
    for args, message in [
        (("--device", "gpu"), "--device must be cuda or cpu"),
        (("--size", "lots"), "--size 'lots' is not a size"),
        (("--budget", "0"), "--budget '0'"),
        (("--scratch", str(tmp_path / "missing")), "no such directory"),
        (("--wheels", str(tmp_path / "missing")), "--wheels"),
        (("--wheels", str(tmp_path / "no-wheels")), "no .whl file in it"),
        (("--out",), "--out needs a value"),
        (("--fast",), "unknown argument --fast"),
        (("--steps", "cuda-tests,bogus"), "--steps: unknown step 'bogus'"),
        (("--steps", "setup"), "--steps: unknown step 'setup'"),  # it always runs
        *[
            (("--steps", odd), "is not a list of steps")
            for odd in ("", ",", "cuda-tests,", "cuda-tests,,tiers", "cuda-tests, tiers")
        ],
        (("--steps", "cuda-tests\nmeasure"), "is not a list of steps"),
    ]:
        out = tmp_path / "out"
        result = session("--out", str(out), *args) if args != ("--out",) else session(*args)
        assert result.returncode == 2, args
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert not out.exists()
