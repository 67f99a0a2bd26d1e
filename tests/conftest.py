"""Shared fixtures: a CliRunner that keeps stdout bytes and stderr apart, and file helpers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cumtool.cli import main

# The test clusters' workers are threads of this process, and distributed's sampling
# profiler walks their frames from a thread of its own: under CPython 3.11 that crashed
# a worker once in thousands of tasks (a segfault in distributed/profile.py, taking the
# pytest worker with it). cumtool's own clusters run without it too (distributed.connect).
# Read by dask's config when it is imported.
os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DATA = REPO / "sample_data"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A Dask cluster for a module's tests: worker threads, but over TCP, so that every
    task's arguments and results are serialized as between processes (in-process comms
    would hand the client the workers' own tables, whose Arrow buffers are aligned, where
    a real cluster's may start at any byte). The tests that ask for it import
    `distributed` with importorskip first."""
    import distributed

    from cumtool.distributed import QUIET_CLUSTER

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       protocol="tcp://", **QUIET_CLUSTER)
    yield cluster.scheduler_address
    cluster.close()


@pytest.fixture
def tiny_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """--engine dask: every row group, and every 64 bytes of a CSV, its own partition
    (for the Dask tests, which import `distributed` with importorskip first)."""
    from cumtool import distributed

    monkeypatch.setattr(distributed, "PARTITION_BYTES", 64)


@pytest.fixture
def parse_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads the JSON Lines C parser's calls run on, in order (skips
    where the parser is not built: nothing runs ahead without it)."""
    import threading

    from cumtool.formats.jsonl import jsonl

    if jsonl.NATIVE is None:
        pytest.skip("the C parser is not built: nothing runs ahead without it")
    where: list[str] = []
    parse = jsonl._parse_native

    def recorded(*args: object) -> object:
        where.append(threading.current_thread().name)
        return parse(*args)

    monkeypatch.setattr(jsonl, "_parse_native", recorded)
    return where


@pytest.fixture
def invoke(runner: CliRunner) -> Callable[..., Result]:
    """Run `cumtool ARGS...`; `input` (bytes or str) becomes standard input.

    result.stdout_bytes holds the raw output, result.stderr the error text."""

    def run(*args: str, input: bytes | str | None = None) -> Result:
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    return run


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, bytes | str], Path]:
    """Write `content` to tmp_path/name and return the path."""

    def write(name: str, content: bytes | str) -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return write
