import numpy as np

Column = tuple[bytes | None, bytes | None, bytes | None, bytes | None, bool]

def parse_block(data: bytes | memoryview, start: int, keys: tuple[bytes, ...], kinds: bytes,
                /) -> tuple[int, int, int, list[Column]] | None: ...
def write_lines(rows: int, columns: list[tuple[bytes, np.ndarray, np.ndarray | None,
                                               np.ndarray | None]], /) -> bytes: ...
