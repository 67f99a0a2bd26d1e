"""The fingerprint's cut points, against a byte-by-byte walk: the last line end, and the
last line end outside quotes (where a growing CSV log's record being written starts)."""

from __future__ import annotations

import hashlib
import random

import pytest

from cumtool import fingerprint


def _walked(data: bytes) -> tuple[int, int]:
    inside = False
    record = line = 0
    for at, byte in enumerate(data):
        if byte == ord('"'):
            inside = not inside
        elif byte in b"\r\n":
            line = at + 1
            record = line if not inside else record
    return line, record


@pytest.mark.parametrize("chunk", [1 << 20, 64, 7, 3])
def test_the_cut_points_match_a_walk_over_the_bytes(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(fingerprint, "_CHUNK", chunk)
    rng = random.Random(chunk)
    path = tmp_path / "log.csv"
    for _ in range(400):
        data = bytes(rng.choice(b'a,"\n\r') for _ in range(rng.randint(0, 60)))
        path.write_bytes(data)
        consumed = rng.randint(1, len(data)) if data else 0
        printed = fingerprint.fingerprint([str(path)], {str(path): [consumed]})[str(path)]
        line, record = _walked(data)
        assert printed.whole_lines == (line, hashlib.sha256(data[:line]).hexdigest())
        assert printed.whole_records == (record, hashlib.sha256(data[:record]).hexdigest())
        assert printed.sha256 == hashlib.sha256(data).hexdigest()
        assert printed.has_prefix(consumed, hashlib.sha256(data[:consumed]).hexdigest())
