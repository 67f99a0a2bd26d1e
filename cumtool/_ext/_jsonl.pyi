import numpy as np

Column = tuple[bytes | None, bytes | None, bytes | None, bytes | None, bool]

def parse_block(data: bytes | memoryview, start: int, keys: tuple[bytes, ...], kinds: bytes,
                /) -> tuple[int, int, int, list[Column]] | None: ...
# (key, values, missing, absent), or text cells: (key, data, starts, ends, flags) with or
# without (missing, absent) after them
LineColumn = (tuple[bytes, np.ndarray, np.ndarray | None, np.ndarray | None]
              | tuple[bytes, bytes | memoryview, np.ndarray, np.ndarray, np.ndarray]
              | tuple[bytes, bytes | memoryview, np.ndarray, np.ndarray, np.ndarray,
                      np.ndarray | None, np.ndarray | None])

def write_lines(rows: int, columns: list[LineColumn], into: bytearray | None = ...,
                /) -> bytes | int: ...
