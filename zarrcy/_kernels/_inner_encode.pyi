from collections.abc import Buffer

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._compress import _Chain

def slot_size(codec: int | _Chain, level: int, chunk_bytes: int) -> int: ...
def gather_encode(
    src: npt.NDArray[np.generic],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    swap: int,
    codec: int | _Chain,
    level: int,
    fill: Buffer,
    write_empty: bool,
    t0: int,
    t1: int,
    out_buf: npt.NDArray[np.uint8] | bytearray | memoryview,
    out_offsets: npt.NDArray[np.int64],
    out_nbytes: npt.NDArray[np.int64],
    empty_flags: npt.NDArray[np.uint8],
    scratch: npt.NDArray[np.uint8] | bytearray | memoryview,
    order: tuple[int, ...] | None = None,
) -> tuple[int, int]: ...
