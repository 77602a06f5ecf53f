"""Reading untrusted files and creating private directories (flashinfer/safe_io.py).

The FIFO and /dev/zero cases would block or read forever without the checks; the
timeout marks only turn such a regression into a failure instead of a hung run.
"""

from __future__ import annotations

import os
import stat

import pytest

from flashinfer.safe_io import RefusedFileError, make_private_dirs, read_regular_file

as_root = pytest.mark.skipif(getattr(os, "geteuid", lambda: -1)() != 0, reason="chown to another user needs root")


def test_reads_a_regular_file_up_to_the_limit(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(path, 100) == b"x" * 100
    with pytest.raises(RefusedFileError, match="larger than 99 bytes"):
        read_regular_file(path, 99)


def test_a_file_growing_past_the_limit_while_read_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    real_fstat = os.fstat

    def fstat_before_growth(fd):  # st_size as it was before the file grew
        info = real_fstat(fd)
        with open(path, "ab") as file:
            file.write(b"y" * 1000)
        return os.stat_result((info.st_mode, *info[1:6], 10, *info[7:]))

    monkeypatch.setattr(os, "fstat", fstat_before_growth)
    with pytest.raises(RefusedFileError, match="larger than 100 bytes"):
        read_regular_file(path, 100)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_device_is_refused_without_blocking_or_reading(tmp_path, untrusted_file, kind):
    path = untrusted_file(kind, tmp_path / "file")
    with pytest.raises(RefusedFileError, match="not a regular file"):
        read_regular_file(path, 1 << 20)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(OSError):
        read_regular_file(tmp_path, 1 << 20)


def test_symlinks_are_followed_unless_told_not_to(tmp_path):
    (tmp_path / "target").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert read_regular_file(tmp_path / "link", 100) == b"data"
    with pytest.raises(OSError):
        read_regular_file(tmp_path / "link", 100, follow_symlinks=False)


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_owner_only_refuses_files_writable_by_group_or_others(tmp_path, mode):
    path = tmp_path / "f"
    path.write_bytes(b"data")
    os.chmod(path, 0o644)
    assert read_regular_file(path, 100, owner_only=True) == b"data"
    os.chmod(path, mode)
    with pytest.raises(RefusedFileError, match="writable by group or others"):
        read_regular_file(path, 100, owner_only=True)
    assert read_regular_file(path, 100) == b"data"  # without owner_only: read


@as_root
def test_owner_only_refuses_files_of_another_user(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"data")
    os.chmod(path, 0o644)
    os.chown(path, 54321, -1)
    with pytest.raises(RefusedFileError, match="owned by uid 54321"):
        read_regular_file(path, 100, owner_only=True)


def test_make_private_dirs_creates_every_missing_directory_with_mode_0700(tmp_path):
    os.chmod(tmp_path, 0o755)
    make_private_dirs(tmp_path / "a" / "b" / "c")
    for directory in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755  # existing ones are left alone
    make_private_dirs(tmp_path / "a" / "b" / "c")  # already there: nothing to do
