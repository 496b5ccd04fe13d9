"""The metrics of the server's processes: one, or the workers of ``chatgate serve --workers N`` summed.

Each worker keeps its own values, so without help a scrape would read whichever worker answered.
``shared_metrics()`` (the parent, before it forks) puts every worker in prometheus-client's
multiprocess mode: each value lives in a memory-mapped file of its process in a directory the parent
creates (``PROMETHEUS_MULTIPROC_DIR``) and removes once the workers have stopped, and any worker
answering ``GET /metrics`` reads every file (``scrape_registry``). Counters and histograms are summed
over the workers, the dead ones included (a replaced worker's counts stay); the open-streams gauge is
summed over the live workers only (``livesum``).

Also here: ``chatgate_build_info{version}`` (always 1; the installed package's version) and the
``process_*`` metrics (CPU, memory, open files, start time). One process has the usual unlabelled
ones; with workers each process of the server (the parent and every live worker) has its own, labelled
``pid``, read from ``/proc`` by the worker that answers.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path

from prometheus_client import CollectorRegistry, Metric, ProcessCollector, multiprocess, values
from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["MULTIPROCESS_ENV", "BuildInfo", "scrape_registry", "shared_metrics", "worker_stopped"]

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""Where the workers' value files are (prometheus-client's own variable); set only while serving workers."""

_VALUE_FILE = re.compile(r"_(\d+)\.db$")


def _version() -> str:
    try:
        return importlib.metadata.version("chatgate")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class BuildInfo(Collector):
    """``chatgate_build_info{version}``: always 1, labelled with the installed chatgate's version."""

    def __init__(self) -> None:
        self.version = _version()

    def collect(self) -> Iterable[Metric]:
        """The one sample."""
        info = GaugeMetricFamily("chatgate_build_info", "The running chatgate: its version", labels=["version"])
        info.add_metric([self.version], 1)
        yield info


class _ServerProcesses(Collector):
    """``process_*`` of the parent and every live worker, labelled ``pid`` (read from ``/proc``)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._collectors: dict[int, ProcessCollector] = {}

    def _pids(self) -> list[int]:
        pids = {os.getppid()}  # the parent, which forks the workers and keeps no metrics of its own
        for path in self._directory.glob("*.db"):
            found = _VALUE_FILE.search(path.name)
            if found:
                pids.add(int(found.group(1)))
        return sorted(pid for pid in pids if Path(f"/proc/{pid}").exists())  # a dead worker's counts stay

    def collect(self) -> Iterable[Metric]:
        """Each process's samples with its ``pid``, one family per metric."""
        families: dict[str, Metric] = {}
        for pid in self._pids():
            collector = self._collectors.get(pid)
            if collector is None:
                collector = self._collectors[pid] = ProcessCollector(pid=partial(int, pid), registry=None)
            for family in collector.collect():
                merged = families.get(family.name)
                if merged is None:
                    merged = families[family.name] = Metric(family.name, family.documentation, family.type)
                for sample in family.samples:
                    merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
        yield from families.values()


def scrape_registry() -> CollectorRegistry | None:
    """With workers: a registry reading every worker's values, the build info and the processes; None otherwise."""
    directory = os.environ.get(MULTIPROCESS_ENV)
    if not directory:
        return None
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    registry.register(BuildInfo())
    registry.register(_ServerProcesses(Path(directory)))
    return registry


@contextlib.contextmanager
def shared_metrics() -> Iterator[Path]:
    """Put the processes forked inside in multiprocess mode; yields the directory, removed at the end.

    Call before any metric of the workers exists (they build their apps after the fork).
    """
    directory = Path(tempfile.mkdtemp(prefix="chatgate-metrics-"))
    previous_env = os.environ.get(MULTIPROCESS_ENV)
    previous_class = values.ValueClass
    os.environ[MULTIPROCESS_ENV] = str(directory)
    # prometheus-client reads the variable only when it is imported, which the command has done already
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    try:
        yield directory
    finally:
        values.ValueClass = previous_class
        if previous_env is None:
            os.environ.pop(MULTIPROCESS_ENV, None)
        else:
            os.environ[MULTIPROCESS_ENV] = previous_env
        shutil.rmtree(directory, ignore_errors=True)


def worker_stopped(pid: int, directory: Path) -> None:
    """Forget the live gauges of a worker that has stopped (its counters and histograms still count)."""
    multiprocess.mark_process_dead(pid, str(directory))  # type: ignore[no-untyped-call]
