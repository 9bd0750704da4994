import numpy as np
import numpy.typing as npt

# type codes: 0..3 int8..int64, 4..7 uint8..uint64, 8 float32, 9 float64
# fmt: (kind, nbits, itemsize, natural, lo, hi, p, emin, emax, bias, has_inf, has_nan, nan_bits)
Fmt = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int]

def cast_into(
    src: npt.NDArray[np.uint8], dst: npt.NDArray[np.uint8], src_code: int, src_itemsize: int,
    dst_code: int, fmt: Fmt, rounding: int, out_of_range: int,
    keys: npt.NDArray[np.uint8] | None = None, values: npt.NDArray[np.uint8] | None = None,
    status: npt.NDArray[np.uint8] | None = None,
) -> int: ...
def scale_offset_cast_into(
    src: npt.NDArray[np.uint8], dst: npt.NDArray[np.uint8], src_code: int, dst_code: int, fmt: Fmt,
    rounding: int, out_of_range: int, offset: float, scale: float,
    keys: npt.NDArray[np.uint8] | None = None, values: npt.NDArray[np.uint8] | None = None,
) -> tuple[int, int]: ...
def cast_scale_offset_into(
    src: npt.NDArray[np.uint8], dst: npt.NDArray[np.uint8], src_code: int, src_itemsize: int, dst_code: int,
    fmt: Fmt, rounding: int, out_of_range: int, offset: float, scale: float,
    keys: npt.NDArray[np.uint8] | None = None, values: npt.NDArray[np.uint8] | None = None,
) -> tuple[int, int]: ...
def dispatch_isa(force: str | None = None) -> str: ...
