"""The replay's deleter: a copy leaves its path at once (a new copy can take the path
while the old one is deleted), and every deletion is done once it is closed."""

from calibration.validate.deleter import Deleter


def test_a_copy_leaves_its_path_at_once_and_is_gone_when_closed(tmp_path):
    copy = tmp_path / "ssd0" / "small"
    copy.mkdir(parents=True)
    (copy / "blob").write_bytes(b"x" * 4096)
    deleter = Deleter()
    deleter.delete(copy)
    assert not copy.exists()
    copy.mkdir()  # the next download's copy, in the same place
    (copy / "blob").write_bytes(b"y")
    deleter.delete(tmp_path / "ssd0" / "absent")  # nothing there: nothing done
    deleter.close()
    assert [p.name for p in (tmp_path / "ssd0").iterdir()] == ["small"]
    assert (copy / "blob").read_bytes() == b"y"
