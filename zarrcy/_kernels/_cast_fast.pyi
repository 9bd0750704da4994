from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from zarrcy._kernels._cast_exact import CastFormat

# every storage type a cast reads or writes (ml_dtypes arrays are passed as their storage)
_S = TypeVar("_S", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)
_D = TypeVar("_D", np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64)

# rounding: 0 nearest-even, 1 towards-zero, 2 towards-positive, 3 towards-negative, 4 nearest-away
# out_of_range: 0 none (error), 1 clamp, 2 wrap
def cast_into(
    src: npt.NDArray[_S], dst: npt.NDArray[_D], fmt: CastFormat, rounding: int, out_of_range: int,
    keys: npt.NDArray[_S] | None = None, values: npt.NDArray[_D] | None = None,
    status: npt.NDArray[np.uint8] | None = None,
) -> int: ...
def dispatch_isa(force: Literal["baseline", "auto"] | None = None) -> Literal["avx2", "baseline"]: ...
def _isa_by_module() -> dict[str, Literal["avx2", "baseline"]]: ...
