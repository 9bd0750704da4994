import numpy as np
import numpy.typing as npt

from zarrcy._kernels._cast_exact import CastFormat

CLASS_NAMES: tuple[str, ...]
SLOT_NAMES: tuple[str, ...]
FLAG_COLLISION: int
FLAG_KIND: int
FLAG_FAIL: int
CLASS_MASK: int

def report_isa(force: str | None = None) -> str: ...
def cast_report_into(
    src: npt.NDArray[np.float32] | npt.NDArray[np.float64], dst: npt.NDArray[np.generic] | None,
    codes: npt.NDArray[np.uint8] | None, fmt: CastFormat, rounding: int, out_of_range: int, scale_offset: bool,
    offset: float, scale: float, keys: npt.NDArray[np.generic] | None, values: npt.NDArray[np.generic] | None,
    dec_fmt: CastFormat, dec_rounding: int, dec_out_of_range: int, dec_keys: npt.NDArray[np.generic] | None,
    dec_values: npt.NDArray[np.generic] | None, fill_code: npt.NDArray[np.generic] | None = None,
    fill_value: npt.NDArray[np.float32] | npt.NDArray[np.float64] | None = None,
) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...], tuple[int, ...], tuple[int, ...], int, float, int,
           float, int, int, int, int]: ...
