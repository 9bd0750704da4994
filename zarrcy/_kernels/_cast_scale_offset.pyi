from typing import TypeVar

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._cast_exact import CastFormat

_S = TypeVar("_S", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)
_D = TypeVar("_D", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)
_F = TypeVar("_F", np.float32, np.float64)

def scale_offset_cast_into(
    src: npt.NDArray[_F], dst: npt.NDArray[_D], fmt: CastFormat, rounding: int, out_of_range: int,
    offset: float, scale: float, keys: npt.NDArray[_F] | None = None, values: npt.NDArray[_D] | None = None,
) -> tuple[int, int]: ...
def cast_scale_offset_into(
    src: npt.NDArray[_S], dst: npt.NDArray[_F], fmt: CastFormat, rounding: int, out_of_range: int,
    offset: float, scale: float, keys: npt.NDArray[_S] | None = None, values: npt.NDArray[_F] | None = None,
) -> tuple[int, int]: ...
