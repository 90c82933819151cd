"""The one containment rule (biovqa.bench.paths): what stays inside a folder and what leaves it."""

from __future__ import annotations

from pathlib import Path

import pytest

from biovqa.bench.paths import contained_path, escape_reason
from biovqa.errors import PathEscapeError


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "sub").mkdir(parents=True)
    (tmp_path / "root" / "sub" / "a.png").write_bytes(b"a")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.png").write_bytes(b"s")
    (tmp_path / "root" / "link-out.png").symlink_to(tmp_path / "outside" / "secret.png")
    (tmp_path / "root" / "dir-out").symlink_to(tmp_path / "outside")
    (tmp_path / "root" / "link-in.png").symlink_to(tmp_path / "root" / "sub" / "a.png")
    return tmp_path / "root"


@pytest.mark.parametrize("relative", ["sub/a.png", "./sub/a.png", "sub//a.png", "link-in.png", "not/yet/there.png",
                                      "sub\\a.png", "urn:uuid.jpg"])
def test_paths_below_the_folder_stay_inside(root: Path, relative: str) -> None:
    assert escape_reason(root, relative) is None
    assert contained_path(root, relative) == root / relative.replace("\\", "/")


@pytest.mark.parametrize(("relative", "reason"), [
    ("../outside/secret.png", "'..'"), ("sub/../../outside/secret.png", "'..'"), ("..\\outside\\secret.png", "'..'"),
    ("/etc/hostname", "absolute"), ("C:\\Windows\\x.png", "absolute"), ("C:x.png", "absolute"),
    ("\\\\server\\share\\x.png", "absolute"), ("", "empty"), ("  ", "empty"), ("a\x00b", "NUL"),
    ("link-out.png", "symlink"), ("dir-out/secret.png", "symlink"),
])
def test_paths_that_leave_the_folder_are_refused_naming_where_they_came_from(root: Path, relative: str,
                                                                              reason: str) -> None:
    assert reason in (escape_reason(root, relative) or "")
    with pytest.raises(PathEscapeError) as refused:
        contained_path(root, relative, file="items.parquet", row=7, field="image", what="image")
    assert (refused.value.file, refused.value.row, refused.value.field) == ("items.parquet", 7, "image")
    assert repr(relative) in refused.value.message and "leaves its folder" in refused.value.message


def test_links_may_lead_into_a_wider_declared_folder_only(root: Path) -> None:
    assert escape_reason(root, "link-out.png", links_within=root.parent) is None
    assert "'..'" in (escape_reason(root, "../outside/secret.png", links_within=root.parent) or "")
