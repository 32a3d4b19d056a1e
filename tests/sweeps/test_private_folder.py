"""A stopped sweep's kept points are pickles read back as trusted, so their folder must be
this user's alone: made mode 0700; one another user owns or may write in (or whose parent
lets another user replace it) is refused before anything in it is read, naming it. A
planted pickle ran its code as the user, and a lock file linked elsewhere was overwritten.
A damaged entry is run again, whatever pickle makes of it."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import pytest

from edgespec.errors import UserInputError
from edgespec.sweeps.kept_points import LOCK_FILE, KeptPoints
from tests.sweeps.test_capacity import metrics_with_violations

LOADED: list[str] = []


def _planted() -> None:
    LOADED.append("planted")


class Planted:
    def __reduce__(self) -> tuple[object, tuple[()]]:
        return (_planted, ())


def _folder_with_planted_point(root: Path) -> Path:
    folder = root / "sweeps" / "KEY"
    folder.mkdir(parents=True)
    (folder / "point-0.pickle").write_bytes(pickle.dumps(Planted()))
    return folder


def test_a_folder_others_may_write_in_is_refused_before_a_point_is_read(tmp_path: Path) -> None:
    folder = _folder_with_planted_point(tmp_path)
    folder.chmod(0o777)
    LOADED.clear()
    with pytest.raises(UserInputError) as info:
        KeptPoints(folder).kept(1)
    assert str(info.value).startswith(
        f"{folder}: writable by other users (mode 777), so the sweep points kept there are "
        "neither read nor written (another user could plant or replace them): remove it, or "
        "set $EDGESPEC_SWEEPS_CACHE to a folder of your own"
    )
    assert LOADED == []
    with pytest.raises(UserInputError, match="writable by other users"), KeptPoints(folder).held():
        pass


def test_a_folder_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder_with_planted_point(tmp_path)
    folder.chmod(0o700)
    owner = os.stat(folder).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    LOADED.clear()
    with pytest.raises(UserInputError, match=rf"^{folder}: owned by another user \(uid {owner}\)"):
        KeptPoints(folder).kept(1)
    assert LOADED == []


def test_a_link_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    real = _folder_with_planted_point(tmp_path)
    link = tmp_path / "sweeps" / "LINKED"
    link.symlink_to(real)
    with pytest.raises(UserInputError, match=r"not a folder \(a link or a file\)"):
        KeptPoints(link).kept(1)


@pytest.mark.parametrize(("mode", "refused"), [(0o777, True), (0o1777, False), (0o755, False)])
def test_a_parent_any_user_may_replace_it_in_is_refused(
    tmp_path: Path, mode: int, refused: bool
) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(mode)
    kept = KeptPoints(parent / "KEY")
    if refused:
        with pytest.raises(UserInputError, match="which any user may write in"):
            kept.keep(0, metrics_with_violations(0))
    else:
        kept.keep(0, metrics_with_violations(0))
        assert kept.kept(1) == {0: metrics_with_violations(0)}


def test_the_folder_is_made_for_this_user_alone(tmp_path: Path) -> None:
    kept = KeptPoints(tmp_path / "sweeps" / "KEY")
    with kept.held():
        kept.keep(0, metrics_with_violations(0))
        assert stat.S_IMODE(os.stat(kept.folder).st_mode) == 0o700
        assert (kept.folder / LOCK_FILE).is_file()


@pytest.mark.parametrize("damaged", [b"I12x\n.", b"ccollections\nOrderedDict\n(I1\ntR.", b""])
def test_a_damaged_point_is_run_again(tmp_path: Path, damaged: bytes) -> None:
    kept = KeptPoints(tmp_path / "KEY")
    kept.keep(0, metrics_with_violations(0))
    kept.keep(1, metrics_with_violations(1))
    (kept.folder / "point-0.pickle").write_bytes(damaged)
    assert kept.kept(2) == {1: metrics_with_violations(1)}
