"""The user tier's hold on the host's shared temp folders (`shared_temp`): what a user id
holds there is counted and removed, nothing of anyone else's, through no link; a `Watch`
stops a worker past its limits, not for what a neighbour wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cs336_harness.grading.sandbox.shared_temp import Footprint, Watch, footprint, remove_owned
from cs336_harness.grading.sandbox.tiers import draw_uid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="files of another user need root")


def _file(path: Path, uid: int, size: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.chown(path, uid, uid, follow_symlinks=False)
    return path


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A shared temp folder: writable by all, sticky, as /tmp."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def test_what_a_user_holds_is_counted_and_removed_and_nothing_else(shared: Path):
    uid, neighbour = draw_uid(), draw_uid()
    _file(shared / "left.txt", uid, 10_000)
    _file(shared / "torch.py", uid)
    own = shared / "own"
    own.mkdir()
    _file(own / "a" / "b.bin", uid, 5000)
    os.chown(own, uid, uid)
    os.chown(own / "a", uid, uid)
    # A world-writable folder of another's (as /tmp/.X11-unix): its entries of `uid` too.
    public = shared / ".X11-unix"
    public.mkdir()
    public.chmod(0o1777)
    _file(public / "X9", uid)
    # A link of its own to the neighbour's file: the link goes, not what it names.
    theirs = _file(shared / "theirs.txt", neighbour, 100)
    link = shared / "link"
    link.symlink_to(theirs)
    os.chown(link, uid, uid, follow_symlinks=False)
    # A root folder it cannot write in: not looked into.
    closed = shared / "closed"
    closed.mkdir(mode=0o755)
    _file(closed / "planted", uid)
    held = footprint(uid, (shared,))
    assert held.entries == 7 and held.bytes >= 15_000
    assert remove_owned(uid, (shared,)).entries == 7
    assert sorted(p.name for p in shared.iterdir()) == [".X11-unix", "closed", "theirs.txt"]
    assert theirs.read_bytes() == b"x" * 100 and (closed / "planted").exists()
    assert footprint(uid, (shared,)) == Footprint()


def test_a_watch_stops_a_fill_past_the_limits_but_not_a_neighbour_s(shared: Path):
    uid, neighbour = draw_uid(), draw_uid()
    watch = Watch(uid, (shared,), limit_bytes=1 << 20, limit_entries=100)
    assert watch.exceeded() == ""
    for i in range(150):  # a neighbour's files, past the limit: not the worker's
        _file(shared / f"n{i}", neighbour)
    assert watch.exceeded() == ""
    for i in range(50):
        _file(shared / f"w{i}", uid)
    assert watch.exceeded() == ""
    for i in range(50, 120):
        _file(shared / f"w{i}", uid)
    assert "it held 120 files" in watch.exceeded() and "past the limit of 100 files" in (
        watch.exceeded()
    )
    remove_owned(uid, (shared,))
    big = Watch(uid, (shared,), limit_bytes=1 << 20, limit_entries=100)
    _file(shared / "big", uid, 2 << 20)
    assert "(2.0 MiB)" in big.exceeded()
