from collections.abc import Callable

import numpy as np

def records(data: bytes, delimiter: str) -> list[list[str | None]] | None: ...
def judge_bounds(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
                 flags: np.ndarray, markers: list[bytes]) -> tuple[int, bool, int]: ...
def cell_kinds(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
               flags: np.ndarray, markers: list[bytes], decimal_comma: bool,
               codes: np.ndarray, places: np.ndarray | None) -> None: ...
def float_texts(values: np.ndarray, missing: np.ndarray | None, null: str) -> list[str]: ...
def cut(data: bytes | bytearray | memoryview, begin: int, delimiter: str, width: int,
        final: bool, starts: np.ndarray, ends: np.ndarray,
        flags: np.ndarray) -> tuple[int, int, int]: ...
def assemble(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
             flags: np.ndarray, capacity: int, rows: int,
             columns: list[int | tuple[np.ndarray, np.ndarray | None, bytes]],
             delimiter: str, by_sink: bool, single: bool,
             into: bytearray | None = ..., /) -> bytes | int: ...

class Pipeline:
    """formats/csv/fast._Job's rows in one compiled loop on a pool of threads (not on Windows)."""

    status: int  # 0 the input ended; 1 hand over; 2 a scan to word; 3 out of memory
    rows: int  # the rows output
    def __init__(self, head: bytes, read: Callable[[int], bytes], ready: Callable[[], bool],
                 delimiter: str, width: int, out_delimiter: str,
                 parse: list[tuple[int, bool]],
                 scans: list[tuple[int, int, int | float | tuple[float, list[float], list[float]]]
                             | tuple[int, int, int | float | tuple[float, list[float], list[float]],
                                     int]],
                 columns: list[tuple[int, int]], markers: list[bytes], null: bytes,
                 by_sink: bool, single: bool, threads: int, chunk_bytes: int,
                 max_record: int, *, readinto: Callable[[memoryview], int] | None = ...,
                 keys: list[int] = ..., flush: float = ..., cores: int = ...,
                 views: bool = ..., steady: bool = ...) -> None: ...
    def __iter__(self) -> Pipeline: ...
    def __next__(self) -> bytes | memoryview: ...
    def close(self) -> None: ...
    def write_rest(self, fd: int, writeback: int = ..., /) -> int: ...
def last_record_end(data: bytes | bytearray | memoryview) -> int: ...
