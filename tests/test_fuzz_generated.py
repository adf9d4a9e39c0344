"""Property-based fuzzing of every ``streambed`` command and every file format it reads.

Hypothesis draws a command from the CLI's own parser (so a new command is fuzzed the day it is
registered), values for its options (valid, extreme, malformed, with control characters) and the
files they name: copies of a real campaign made once per session by a tiny sim plan (ledger,
plan.json, exploration.json, single-task metrics, exported CSVs), the shipped sim profiles, the
local inventory and a data-lake manifest, damaged most of the time, or special paths (FIFOs,
device nodes, symlinks, directories, a sparse 65 MB file). Each invocation runs in a child forked
from a process that imported StreamBed once (tests/fuzz_support/forkserver.py), under RLIMIT_AS 1 GB
and a 30-s timeout; the child cannot start a process or open an Internet connection, so no engine
(Flink, Spark, Terraform, Ansible, SSH, Kafka) is ever started by the fuzz.

The invariants are in tests/fuzz_support/session.py and docs/robustness.md. The run is seeded
(FUZZ_SEED) and bounded (FUZZ_EXAMPLES); ``make fuzz`` runs a longer one and keeps every failing
case's files with a repro.sh.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("hypothesis")

from fuzz_support.session import Session, run  # noqa: E402
from fuzz_support.run import DEFAULT_SEED  # noqa: E402

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
"""Cases in ``make test``: well under 3 minutes on this busy 2-core machine (docs/robustness.md)."""
SEED = int(os.environ.get("FUZZ_SEED", str(DEFAULT_SEED)))


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = Session(tmp_path_factory.mktemp("fuzz"), SEED, keep_failures=tmp_path_factory.mktemp("fuzz-failures"))
    yield s
    s.close()


def test_corpus_is_real(session):
    """The fuzz starts from what the product writes: a plan campaign's files exist and the ledger has steps."""
    assert (session.corpus.campaign / "ledger.sqlite").stat().st_size > 10_000
    for fmt in ("plan", "exploration", "metrics", "csv", "profile", "manifest", "inventory_yaml"):
        assert session.corpus.of(fmt), fmt
        assert all(p.stat().st_size > 0 for p in session.corpus.of(fmt)), fmt


def test_every_command_is_fuzzed(session):
    """The command list comes from the parser: every leaf command the CLI registers is there."""
    names = {c.name for c in session.commands}
    assert {"plan", "sim run", "ledger verify", "export", "data size", "report", "infra provision"} <= names
    assert len(names) >= 30


def test_a_damaged_inventory_settings_file_is_one_line(session, tmp_path):
    """Found by this fuzz: group_vars/all.yml of two YAML documents gave a ComposerError traceback in
    ``nodes disks``. The guard stops the child if the inventory is accepted and a host is contacted."""
    import shutil

    inv = tmp_path / "inventories" / "local"
    shutil.copytree(session.corpus.inventory, inv)
    settings = inv / "group_vars" / "all.yml"
    settings.write_text(settings.read_text() + "\n---\nsecond: document\n")
    out, err, guard = tmp_path / "out", tmp_path / "err", tmp_path / "guard"
    result = session.server.run(["nodes", "disks", "--inventory", "inventories/local"], str(tmp_path), str(out),
                                str(err), str(guard), 30, 1 << 30)
    lines = err.read_text().splitlines()
    assert result["exit"] == 2, (result, err.read_text())
    assert len(lines) == 1 and "all.yml" in lines[0] and "not valid YAML" in lines[0], lines


@pytest.mark.timeout(900)
def test_generated_invocations_keep_the_invariants(session):
    run(session, EXAMPLES)
    summary = session.summary()
    print(f"fuzz: seed {SEED}, {summary['invocations']} invocations, exits {summary['exits']}, "
          f"{summary['seconds_total']} s")
    assert summary["invocations"] >= EXAMPLES // 2, summary
    failures = len(session.failures())
    assert failures == 0, (
        f"{summary['failures']} of {summary['invocations']} generated invocations broke an invariant "
        f"(FUZZ_SEED={SEED} FUZZ_EXAMPLES={EXAMPLES} reproduces them; {summary['problems']}); "
        f"failing cases kept in {session.keep_failures}:\n{session.report()}")
