import numpy as np

class Owned:
    """A parsed column's memory (read-only buffer); bytes() copies it."""
    def __buffer__(self, flags: int, /) -> memoryview: ...

Column = tuple[Owned | None, Owned | None, Owned | None, Owned | None, bool]

def is_ascii(data: bytes | bytearray | memoryview, /) -> bool: ...

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
