from enum import IntEnum

import numpy as np
import numpy.typing as npt

SENTINEL_U64: int
MAX_RANK: int

class IndexFault(IntEnum):
    FAULT_NONE = 0
    FAULT_HALF_EMPTY = 1
    FAULT_OVERFLOW = 2
    FAULT_PAST_END = 3
    FAULT_INTO_INDEX = 4

def decode_index(raw: npt.NDArray[np.uint8] | bytes | memoryview, out: npt.NDArray[np.uint64]) -> None: ...
def encode_index(index: npt.NDArray[np.uint64], out: npt.NDArray[np.uint8] | bytearray | memoryview) -> None: ...
def validate_index(
    index: npt.NDArray[np.uint64], data_start: int, data_stop: int, shard_size: int
) -> tuple[int, int]: ...
def build_index(nbytes: npt.NDArray[np.uint64], base: int, index_out: npt.NDArray[np.uint64]) -> int: ...
def coalesce(
    offsets: npt.NDArray[np.uint64],
    nbytes: npt.NDArray[np.uint64],
    order: npt.NDArray[np.int64],
    gap: int,
    cap: int,
    group_of: npt.NDArray[np.int64],
    group_start: npt.NDArray[np.uint64],
    group_stop: npt.NDArray[np.uint64],
) -> int: ...
def empty_chunks(
    data: npt.NDArray[np.uint8] | memoryview,
    shape: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    itemsize: int,
    fill_row: npt.NDArray[np.uint8] | bytes,
    out: npt.NDArray[np.uint8],
) -> None: ...
def copy_ranges(
    src: npt.NDArray[np.uint8] | bytes | memoryview,
    src_offsets: npt.NDArray[np.uint64],
    nbytes: npt.NDArray[np.uint64],
    dst: npt.NDArray[np.uint8] | bytearray | memoryview,
    dst_offsets: npt.NDArray[np.uint64],
) -> int: ...
def plan_reads(
    index: npt.NDArray[np.uint64],
    linear: npt.NDArray[np.int64],
    shard_size: int,
    max_one: int,
    per_chunk: int,
    slack: int,
    gap: int,
    cap: int,
    task_src: npt.NDArray[np.int64],
    task_off: npt.NDArray[np.int64],
    task_len: npt.NDArray[np.int64],
    group_start: npt.NDArray[np.uint64],
    group_stop: npt.NDArray[np.uint64],
) -> int: ...
