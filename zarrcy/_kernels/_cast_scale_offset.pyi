from typing import TypeVar

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._cast_exact import CastFormat

S = TypeVar("S", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)
D = TypeVar("D", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)
F = TypeVar("F", np.float32, np.float64)

def scale_offset_cast_into(
    src: npt.NDArray[F], dst: npt.NDArray[D], fmt: CastFormat, rounding: int, out_of_range: int,
    offset: float, scale: float, keys: npt.NDArray[F] | None = None, values: npt.NDArray[D] | None = None,
) -> tuple[int, int]: ...
def cast_scale_offset_into(
    src: npt.NDArray[S], dst: npt.NDArray[F], fmt: CastFormat, rounding: int, out_of_range: int,
    offset: float, scale: float, keys: npt.NDArray[S] | None = None, values: npt.NDArray[F] | None = None,
) -> tuple[int, int]: ...
