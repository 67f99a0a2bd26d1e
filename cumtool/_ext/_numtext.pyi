import numpy as np

Buffer = bytes | bytearray | memoryview

def format_floats(values: np.ndarray, missing: np.ndarray | None,
                  null: bytes) -> tuple[bytes, bytes]: ...
def parse_floats(data: Buffer, starts: np.ndarray, ends: np.ndarray, values: np.ndarray,
                 ok: np.ndarray) -> int: ...
def parse_ints(data: Buffer, starts: np.ndarray, ends: np.ndarray, values: np.ndarray,
               status: np.ndarray) -> int: ...
