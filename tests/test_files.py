"""Files written for users appear whole or not at all (streambed.files)."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import REPO
from streambed.files import replacing, write_text


def test_write_text_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("old\n")
    write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"slots": 12}\n')
    with pytest.raises(RuntimeError):
        with replacing(path) as tmp:
            tmp.write_text('{"slo')
            raise RuntimeError("killed while writing")
    assert path.read_text() == '{"slots": 12}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_a_file_that_cannot_be_written_is_named_on_one_line(tmp_path):
    from streambed.errors import UserError

    path = tmp_path / "plan.json"
    path.write_text("old\n")
    with pytest.raises(UserError, match=r"plan\.json: cannot write \(No space left on device\); the file is left"):
        with replacing(path) as tmp:
            tmp.write_text("new")
            raise OSError(28, "No space left on device")  # what a full disk raises from write()
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_the_temporary_keeps_the_extension_and_the_result_the_umask(tmp_path):
    path = tmp_path / "model.png"
    with replacing(path) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp != path
        tmp.write_bytes(b"png")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("path, ignored", [
    ("terraform/examples/ec2/terraform.tfstate", True),
    ("terraform/examples/ec2/terraform.tfstate.backup", True),
    ("terraform/examples/ec2/secrets.tfvars", True),
    ("terraform/examples/ec2/cluster.example.tfvars", False),
    ("inventories/ec2/.env", True),
    ("campaigns/plan-q5/ledger.lock", True),
    ("controller/streambed/files.py", False),
])
def test_state_and_secrets_stay_out_of_git(path, ignored):
    check = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO)
    assert check.returncode == (0 if ignored else 1), path
