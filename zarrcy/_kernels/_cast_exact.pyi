class CastFormat:
    """A real-number format as the cast kernels see it (typed, checked once)."""

    code: int  # storage type code: 0..3 int8..int64, 4..7 uint8..uint64, 8 float32, 9 float64
    def __init__(
        self, *, kind: int, nbits: int, itemsize: int, natural: bool, lo: int = 0, hi: int = 0, p: int = 0,
        emin: int = 0, emax: int = 0, bias: int = 0, has_inf: bool = False, has_nan: bool = False,
        nan_bits: int = 0,
    ) -> None: ...
    @property
    def kind(self) -> int: ...
    @property
    def nbits(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def natural(self) -> bool: ...
