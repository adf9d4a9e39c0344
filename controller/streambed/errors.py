"""Typed errors.

Two families, handled differently:

* ``UserError``: bad input from the person at the keyboard (a missing file, a value out of range,
  an unknown query). The CLI prints its message as one line and exits non-zero, never a traceback.
  Messages name the field or value and say what is expected.
* ``TestbedError``: something went wrong in the engine under test (job restarted, metrics missing,
  engine unreachable). The Capacity Estimator catches these, discards the window and retries a
  bounded number of times (paper section IV: a failed measurement is never counted).
"""

from __future__ import annotations


class StreamBedError(Exception):
    """Base class of every error StreamBed raises on purpose."""


class UserError(StreamBedError):
    """Invalid input; the message is shown to the user as is."""


class ProfileError(UserError):
    """A simulation profile (YAML) is malformed."""


class TestbedError(StreamBedError):
    """The testbed could not produce a valid measurement."""

    __test__ = False  # not a pytest test class despite the name


class JobRestarted(TestbedError):
    """The job restarted (or a task failed) during an observation window."""


class JobFailed(TestbedError):
    """The job failed to start or ended on its own (not a SQL error: those are found before submission)."""


class TaskManagerLost(TestbedError):
    """A TaskManager left the cluster during a run (killed, out of memory, its machine lost)."""


class MetricsMissing(TestbedError):
    """The metrics for a window are missing or incomplete."""


class TestbedUnreachable(TestbedError):
    """The engine or its monitoring does not answer."""

    __test__ = False


class QueryRejected(UserError):
    """The engine refused the query (e.g. invalid SQL); carries the engine's own message."""


class MachineTooBusy(TestbedUnreachable):
    """Every window the testbed observed was taken while the host was short of CPU: measuring again
    at once would only wait for the same load, so the estimate stops (as for an unreachable engine)."""

    __test__ = False
