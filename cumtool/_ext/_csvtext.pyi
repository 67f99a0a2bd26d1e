from collections.abc import Callable

import numpy as np

def records(data: bytes, delimiter: str) -> list[list[str | None]] | None: ...
def judge_cells(rows: list[list[str | None]], column: int, markers: set[str],
                limit: int) -> tuple[int, bool, int]: ...
def judge_bounds(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
                 flags: np.ndarray, markers: set[str]) -> tuple[int, bool, int]: ...
def parse_cells(rows: list[list[str | None]], column: int, kind: str,
                markers: set[str] | None, values: np.ndarray,
                valid: np.ndarray | None) -> int: ...
def float_texts(values: np.ndarray, missing: np.ndarray | None, null: str) -> list[str]: ...
def cut(data: bytes | bytearray | memoryview, begin: int, delimiter: str, width: int,
        final: bool, starts: np.ndarray, ends: np.ndarray,
        flags: np.ndarray) -> tuple[int, int, int]: ...
def assemble(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
             flags: np.ndarray, capacity: int, rows: int,
             columns: list[int | tuple[np.ndarray, np.ndarray | None, bytes]],
             delimiter: str, by_sink: bool, single: bool) -> bytes: ...

class Pipeline:
    """fastcsv._Job's rows in one compiled loop on a pool of threads (not on Windows)."""

    status: int  # 0 the input ended; 1 hand over; 2 a scan to word; 3 out of memory
    rows: int  # the rows output
    def __init__(self, head: bytes, read: Callable[[int], bytes], ready: Callable[[], bool],
                 delimiter: str, width: int, out_delimiter: str,
                 parse: list[tuple[int, bool]], scans: list[tuple[int, int, int | float]],
                 columns: list[tuple[int, int]], markers: list[bytes], null: bytes,
                 by_sink: bool, single: bool, threads: int, chunk_bytes: int,
                 max_record: int, *, readinto: Callable[[memoryview], int] | None = ...,
                 keys: list[int] = ...,
                 views: bool = ...) -> None: ...
    def __iter__(self) -> Pipeline: ...
    def __next__(self) -> bytes | memoryview: ...
    def close(self) -> None: ...
