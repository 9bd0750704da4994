class CastFormat:
    """A real-number format as the cast kernels see it (typed, checked once)."""

    def __init__(
        self, *, kind: int, nbits: int, itemsize: int, natural: bool, lo: int = 0, hi: int = 0, p: int = 0,
        emin: int = 0, emax: int = 0, bias: int = 0, has_inf: bool = False, has_nan: bool = False,
        nan_bits: int = 0, no_neg_zero: bool = False, unsigned: bool = False, max_frac: int = -1,
    ) -> None: ...
    @property
    def kind(self) -> int: ...
    @property
    def nbits(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def natural(self) -> bool: ...
    @property
    def code(self) -> int:
        """Storage type code: 0..3 int8..int64, 4..7 uint8..uint64, 8 float32, 9 float64 (read-only)."""

class Arrays:
    """Internal: the held array arguments of one cast entry-point call (no Python-level API)."""
