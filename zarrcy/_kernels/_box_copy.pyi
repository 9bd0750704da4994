from typing import Sequence

import numpy as np
import numpy.typing as npt

def copy_box(
    srcs: Sequence[np.ndarray | None],
    pieces: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    chunk_shape: npt.NDArray[np.int64],
    out: np.ndarray,
    fill: npt.NDArray[np.uint8] | bytes,
) -> None: ...
