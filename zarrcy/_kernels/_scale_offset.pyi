from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

_T = TypeVar("_T", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)

def encode_into(x: npt.NDArray[_T], y: npt.NDArray[_T], offset: int | float, scale: int | float) -> int: ...
def decode_into(x: npt.NDArray[_T], y: npt.NDArray[_T], offset: int | float, scale: int | float) -> int: ...
def dispatch_isa(force: Literal["baseline", "auto"] | None = None) -> Literal["avx2", "baseline"]: ...
