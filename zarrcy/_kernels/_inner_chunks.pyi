from collections.abc import Buffer

from zarrcy._kernels._inner_encode import gather_encode as gather_encode
from zarrcy._kernels._inner_encode import slot_size as slot_size

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._compress import GZIP as GZIP
from zarrcy._kernels._compress import GZIP_BAD_DATA as GZIP_BAD_DATA
from zarrcy._kernels._compress import GZIP_TOO_LONG as GZIP_TOO_LONG
from zarrcy._kernels._compress import GZIP_TOO_SHORT as GZIP_TOO_SHORT
from zarrcy._kernels._compress import GZIP_TRAILING as GZIP_TRAILING
from zarrcy._kernels._compress import NO_SPACE as NO_SPACE
from zarrcy._kernels._compress import NOT_RUN as NOT_RUN
from zarrcy._kernels._compress import OK as OK
from zarrcy._kernels._compress import RAW as RAW
from zarrcy._kernels._compress import RAW_SIZE as RAW_SIZE
from zarrcy._kernels._compress import _Chain
from zarrcy._kernels._workers import Budget
from zarrcy._kernels._compress import describe as describe

MAX_RANK: int
def decode_scatter(
    src: Buffer,
    task_coords: npt.NDArray[np.int64],
    task_off: npt.NDArray[np.int64],
    task_len: npt.NDArray[np.int64],
    t0: int,
    t1: int,
    dim_base: npt.NDArray[np.int64],
    dim_start: npt.NDArray[np.int64],
    dim_local: npt.NDArray[np.int64],
    dim_out: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    swap: int,
    codec: int | _Chain,
    fill: Buffer,
    out: npt.NDArray[np.generic],
    scratch: npt.NDArray[np.uint8] | bytearray | memoryview,
    order: tuple[int, ...] | None = None,
) -> tuple[int, int]: ...
def decode_scatter_all(
    srcs: list[Buffer],
    task_src: npt.NDArray[np.int64],
    task_coords: npt.NDArray[np.int64],
    task_off: npt.NDArray[np.int64],
    task_len: npt.NDArray[np.int64],
    dim_base: npt.NDArray[np.int64],
    dim_start: npt.NDArray[np.int64],
    dim_local: npt.NDArray[np.int64],
    dim_out: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    swap: int,
    codec: int | _Chain,
    fill: Buffer,
    out: npt.NDArray[np.generic],
    status: npt.NDArray[np.uint8],
    threads: int,
    order: tuple[int, ...] | None = None,
    budget: Budget | None = None,
) -> int: ...
def decode_points_all(
    srcs: list[Buffer],
    task_src: npt.NDArray[np.int64],
    task_off: npt.NDArray[np.int64],
    task_len: npt.NDArray[np.int64],
    pt_start: npt.NDArray[np.int64],
    pt_local: npt.NDArray[np.int64],
    pt_out: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    swap: int,
    codec: int | _Chain,
    fill: Buffer,
    out: npt.NDArray[np.generic],
    status: npt.NDArray[np.uint8],
    threads: int,
    budget: Budget | None = None,
) -> int: ...
def decode_points(
    src: Buffer,
    task_off: npt.NDArray[np.int64],
    task_len: npt.NDArray[np.int64],
    t0: int,
    t1: int,
    pt_start: npt.NDArray[np.int64],
    pt_local: npt.NDArray[np.int64],
    pt_out: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    swap: int,
    codec: int | _Chain,
    fill: Buffer,
    out: npt.NDArray[np.generic],
    scratch: npt.NDArray[np.uint8] | bytearray | memoryview,
) -> tuple[int, int]: ...
