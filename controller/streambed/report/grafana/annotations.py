"""A campaign's phases as Grafana annotations, posted while it runs (grafana/README.md).

Off unless a Grafana URL is configured: ``--grafana-url`` of the campaign commands, else the
environment variable STREAMBED_GRAFANA_URL; the token (a service account's) only from
STREAMBED_GRAFANA_TOKEN, so that it never shows in a process list. There is no default URL.

The campaign's algorithms tell a :class:`GrafanaAnnotations` of each phase as a ``with`` block (the
estimator's ``Phases``: warm-up, cooldown, each injection rate, its observation window, each
validation run). When a phase begins it is posted through grafana-client as an annotation at that
instant, so that a run watched live shows it; when it ends the same annotation becomes the region
[start, end]. Times are the wall clock's, in ms (Grafana's), as Prometheus stamps the samples the
dashboard shows; the simulated testbed's own clock starts at 0 and is not used. Each annotation is
organisation-wide (no dashboard id) and tagged ``streambed``, ``campaign:<kind>``, ``query:<query>``
and ``phase:<phase>``: the campaign dashboard's annotation query shows those of its ``query``. A
campaign that names its cluster (a validation: the production inventory's, such as lab-production)
adds ``cluster:<name>`` and says it in each annotation's text.

A Grafana that fails (an error status, a refused connection, a timeout) never stops a campaign: one
warning line, then annotations are off for the rest of that campaign.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from ...errors import UserError

URL_VARIABLE = "STREAMBED_GRAFANA_URL"
TOKEN_VARIABLE = "STREAMBED_GRAFANA_TOKEN"
TAG = "streambed"
"""The tag of every annotation StreamBed posts (the dashboard's annotation query: report/grafana/dashboards.py)."""
TIMEOUT_S = 5.0
"""Longest wait for one answer of Grafana: at most one such wait before annotations are off."""


@dataclass(frozen=True)
class GrafanaSettings:
    """Where annotations go: Grafana's base URL (with its sub-path, if it is served under one)."""

    url: str
    token: str | None = None
    timeout_s: float = TIMEOUT_S

    @classmethod
    def resolve(cls, url: str | None, environ: Mapping[str, str] = os.environ) -> "GrafanaSettings | None":
        """``url`` (the option), else $STREAMBED_GRAFANA_URL, with $STREAMBED_GRAFANA_TOKEN; None: off."""
        where = "--grafana-url" if url else URL_VARIABLE
        url = url or environ.get(URL_VARIABLE) or None
        if url is None:
            return None
        # A malformed address is bad input, refused before the campaign starts; an unreachable one is
        # only a warning once it runs.
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(f"{where}: expected Grafana's http(s) address such as http://monitoring:3000, "
                            f"got {url!r:.80}")
        return cls(url, environ.get(TOKEN_VARIABLE) or None)

    @property
    def shown(self) -> str:
        """The URL without credentials, for messages."""
        try:
            parts = urlsplit(self.url)
            host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        except ValueError:  # a malformed port
            return "(malformed URL)"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))


def tags(campaign: str, query: str, phase: str, cluster: str | None = None) -> list[str]:
    """An annotation's tags; ``cluster:<name>`` once the campaign has said which cluster it runs on."""
    return [TAG, f"campaign:{campaign}", f"query:{query}", f"phase:{phase}", *([f"cluster:{cluster}"] if cluster else [])]


def client(settings: GrafanaSettings) -> Any:
    """grafana-client's API object for ``settings`` (imported here: only a configured Grafana needs it)."""
    from grafana_client import GrafanaApi

    parts = urlsplit(settings.url)
    # grafana-client appends "api" to the URL's path as it is: a sub-path must end with "/".
    path = parts.path if parts.path.endswith("/") or not parts.path else parts.path + "/"
    return GrafanaApi.from_url(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")),
                               credential=settings.token, timeout=settings.timeout_s)


class GrafanaAnnotations:
    """A campaign's phases posted to Grafana (the estimator's ``Phases``), off after the first failure."""

    def __init__(self, settings: GrafanaSettings, *, campaign: str, query: str, warn: Callable[[str], None],
                 clock: Callable[[], float] = time.time, api: Any = None):
        self.settings = settings
        self.campaign, self.query = campaign, query
        self.warn = warn
        self.clock = clock
        self.api = api if api is not None else client(settings)
        self.on = True
        self.posted = 0
        """Annotations posted so far (begun phases)."""
        self.cluster: str | None = None
        """The cluster the campaign runs on (:meth:`on_cluster`): tagged and named in every annotation."""

    def on_cluster(self, name: str) -> None:
        """Name ``name`` (an inventory's cluster, such as lab-production) in the annotations from now on:
        a validation on the production cluster and a plan on the testbed are told apart in Grafana."""
        self.cluster = name

    @contextmanager
    def phase(self, name: str, text: str) -> Iterator[None]:
        """The phase ``name`` (``text`` says what it is) runs for the ``with`` block."""
        start = self._ms()
        text = f"{text} (on {self.cluster})" if self.cluster else text
        annotation = self._call("id", lambda: self.api.annotations.add_annotation(
            time_from=start, tags=tags(self.campaign, self.query, name, self.cluster), text=text))
        try:
            yield
        finally:
            if annotation is not None and self.on:
                end = self._ms()
                self._call("message", lambda: self.api.annotations.partial_update_annotation(
                    annotation["id"], time_from=start, time_to=end, tags=tags(self.campaign, self.query, name, self.cluster),
                    text=text))

    def _ms(self) -> int:
        return int(round(self.clock() * 1000))

    def _call(self, expected: str, request: Callable[[], Any]) -> Any:
        """``request``'s answer, a JSON object with the key ``expected`` (Grafana's: "id" for a new
        annotation, "message" for a patched one); None, one warning and annotations off when it fails
        in any way."""
        if not self.on:
            return None
        try:
            answer = request()
            if not isinstance(answer, dict) or expected not in answer:
                raise ValueError(f"unexpected answer {answer!r:.80}")
            self.posted += expected == "id"
            return answer
        except Exception as e:  # noqa: BLE001 - requests, grafana-client and a bad answer raise many types
            self.on = False
            self.warn(f"Grafana at {self.settings.shown}: {self._reason(e)}; annotations are off for this campaign")
            return None

    def _reason(self, e: Exception) -> str:
        """What went wrong, in a few words (a connection error's own text runs over several lines)."""
        import requests

        if isinstance(e, requests.Timeout):
            return f"no answer within {self.settings.timeout_s:g} s"
        if isinstance(e, requests.ConnectionError):
            return "cannot connect"
        message = getattr(e, "message", None) or str(e)  # grafana-client's: "Server Error 500: ..."
        return f"{type(e).__name__}: {message}"[:120]


def annotations(settings: GrafanaSettings | None, *, campaign: str, query: str,
                warn: Callable[[str], None]) -> GrafanaAnnotations | None:
    """The phases' observer of a campaign: Grafana's when ``settings`` names one; None when it does not,
    or when no client can be built for it (one warning: a malformed URL)."""
    if settings is None:
        return None
    try:
        return GrafanaAnnotations(settings, campaign=campaign, query=query, warn=warn)
    except Exception as e:  # noqa: BLE001 - a malformed URL
        warn(f"Grafana at {settings.shown}: {type(e).__name__}: {e}; annotations are off for this campaign")
        return None
