Column = tuple[bytes | None, bytes | None, bytes | None, bytes | None, bool]

def parse_block(data: bytes | memoryview, start: int, keys: tuple[bytes, ...], kinds: bytes,
                /) -> tuple[int, int, int, list[Column]] | None: ...
