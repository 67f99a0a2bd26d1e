"""Inputs and outputs as fsspec URLs, against a real S3-compatible server started here
(moto's server, as s3fs's own tests do); skipped with the reason when it cannot start."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ok

s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed: pip install 'cumtool[cloud]'")

TABLE = "a,b,note\n3,1.5,x\n-1,2.5,y\n4,-0.5,z\n"
SUMMED = b"a,b,note\n3,1.5,x\n2,4.0,y\n6,3.5,z\n"


@pytest.fixture(scope="module")
def endpoint() -> str:
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as error:  # moto without its [server] extra (flask, werkzeug)
        pytest.skip(f"moto's S3 server cannot start: {error}; pip install 'moto[server]'")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
    except OSError as error:
        pytest.skip(f"moto's S3 server cannot start: {error}")
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(endpoint, monkeypatch, request) -> s3fs.S3FileSystem:
    """A fresh bucket on the server; cumtool finds the server through AWS_ENDPOINT_URL,
    as any boto-based tool does."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    bucket = f"b-{request.node.name.lower().replace('_', '-')[:40]}"
    fs.mkdir(bucket)
    yield fs
    fs.rm(bucket, recursive=True)
    s3fs.S3FileSystem.clear_instance_cache()


def _bucket(fs: s3fs.S3FileSystem) -> str:
    """The test's bucket: the only one (each test's is removed after it)."""
    (bucket,) = fs.ls("")
    return str(bucket)


def test_read_a_csv_url(invoke, s3):
    bucket = _bucket(s3)
    s3.pipe(f"{bucket}/t.csv", TABLE.encode())
    result = ok(invoke("cumsum", f"s3://{bucket}/t.csv"))
    assert result.stdout_bytes == SUMMED


def test_read_a_parquet_url(invoke, s3):
    bucket = _bucket(s3)
    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": [1.5, -0.0, 2.0]}), buffer, row_group_size=1)
    s3.pipe(f"{bucket}/t.parquet", buffer.getvalue())
    result = ok(invoke("cumsum", f"s3://{bucket}/t.parquet", "--to", "csv"))
    assert result.stdout_bytes == b"x\n1.5\n1.5\n3.5\n"


def test_write_a_url(invoke, s3, write_file):
    bucket = _bucket(s3)
    path = write_file("t.csv", TABLE)
    ok(invoke("cumsum", str(path), "-o", f"s3://{bucket}/out/t.csv"))
    assert s3.cat(f"{bucket}/out/t.csv") == SUMMED


def test_a_failed_run_leaves_the_remote_object_as_it_was(invoke, s3, write_file):
    bucket = _bucket(s3)
    path = write_file("big.csv", f"n\n{2**62}\n{2**62}\n")
    s3.pipe(f"{bucket}/old.csv", b"precious\n")
    result = invoke("cumsum", str(path), "-o", f"s3://{bucket}/old.csv")
    assert result.exit_code == 1
    assert "row 2" in result.stderr
    result = invoke("cumsum", str(path), "-o", f"s3://{bucket}/new.csv")
    assert result.exit_code == 1
    s3.invalidate_cache()
    assert s3.cat(f"{bucket}/old.csv") == b"precious\n"
    assert sorted(s3.ls(bucket)) == [f"{bucket}/old.csv"]


def test_a_missing_object(invoke, s3):
    bucket = _bucket(s3)
    result = invoke("cumsum", f"s3://{bucket}/nothing.csv")
    assert result.exit_code == 1
    assert result.stderr == f"Error: s3://{bucket}/nothing.csv: no such file\n"


def test_https_is_read_only(invoke, write_file):
    path = write_file("t.csv", TABLE)
    result = invoke("cumsum", str(path), "-o", "https://example.com/t.csv")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: cannot write https://example.com/t.csv: https:// "
                                    "URLs are read-only")


@pytest.mark.slow  # a local cluster and the S3 server: 6 s
def test_dask_reads_and_writes_urls(s3, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="pip install 'cumtool[dask]'")
    from cumtool import distributed as engine
    from cumtool.engine import run
    from cumtool.request import Request

    monkeypatch.setattr(engine, "PARTITION_BYTES", 64)
    bucket = _bucket(s3)
    rows = "".join(f"{i},{i * 0.1}\n" for i in range(200))
    s3.pipe(f"{bucket}/in/a.csv", ("k,x\n" + rows).encode())
    s3.pipe(f"{bucket}/in/b.csv", ("k,x\n" + rows).encode())
    local = tmp_path / "whole.csv"
    (tmp_path / "whole-in.csv").write_text("k,x\n" + rows + rows)
    run(Request("cumsum", str(tmp_path / "whole-in.csv"), output=str(local)))
    with distributed.LocalCluster(n_workers=2, processes=False,
                                  **engine.QUIET_CLUSTER) as cluster:
        request = Request("cumsum", engine="dask", scheduler=cluster.scheduler_address,
                          output=str(tmp_path / "one.csv"))
        engine.run_paths(request, [f"s3://{bucket}/in/a.csv", f"s3://{bucket}/in/b.csv"])
        assert (tmp_path / "one.csv").read_bytes() == local.read_bytes()
        engine.run_paths(dataclass_replace(request, output=None),
                         [f"s3://{bucket}/in/a.csv", f"s3://{bucket}/in/b.csv"],
                         output_dir=f"s3://{bucket}/out")
    s3.invalidate_cache()
    assert sorted(s3.ls(f"{bucket}/out")) == [f"{bucket}/out/{n}"
                                              for n in ("_SUCCESS", "a.csv", "b.csv")]
    joined = s3.cat(f"{bucket}/out/a.csv") + s3.cat(f"{bucket}/out/b.csv").split(b"\n", 1)[1]
    assert joined == local.read_bytes()
    assert np.isclose(float(joined.rsplit(b",", 1)[1]), 2 * sum(i * 0.1 for i in range(200)))


def dataclass_replace(request, **changes):
    import dataclasses

    return dataclasses.replace(request, **changes)


def test_state_with_a_url_input_knows_a_retry_by_its_bytes(invoke, s3, tmp_path):
    """A URL input of a --state run is downloaded once and fingerprinted: run again on
    the same object it is a retry; a new object at the same URL is a new run."""
    bucket = _bucket(s3)
    state = str(tmp_path / "s.json")
    s3.pipe(f"{bucket}/day.csv", b"kwh\n1\n2\n")
    first = ok(invoke("cumsum", f"s3://{bucket}/day.csv", "--state", state))
    assert first.stdout_bytes == b"kwh\n1\n3\n"
    assert ok(invoke("cumsum", f"s3://{bucket}/day.csv", "--state", state)).stdout_bytes == (
        b"kwh\n1\n3\n")
    s3.pipe(f"{bucket}/day.csv", b"kwh\n10\n")
    assert ok(invoke("cumsum", f"s3://{bucket}/day.csv", "--state", state)).stdout_bytes == (
        b"kwh\n13\n")


def test_no_credentials_is_one_line_naming_the_url(invoke, write_file, monkeypatch):
    """botocore's NoCredentialsError was an internal error ("a bug in cumtool")."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                 "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    s3fs.S3FileSystem.clear_instance_cache()
    result = invoke("cumsum", "s3://no-such-bucket/x.csv")
    assert (result.exit_code, result.stderr) == (
        1, "Error: s3://no-such-bucket/x.csv: cannot read: NoCredentialsError: Unable to "
           "locate credentials\n")
    result = invoke("cumsum", str(write_file("a.csv", TABLE)), "-o", "s3://no-such-bucket/t.csv")
    assert (result.exit_code, result.stderr) == (
        1, "Error: cannot write s3://no-such-bucket/t.csv: NoCredentialsError: Unable to "
           "locate credentials\n")
