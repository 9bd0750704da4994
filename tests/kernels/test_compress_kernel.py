"""zarrcy._kernels._compress (the native codec engine, issue 21) against the libraries'
own Python bindings as references: numcodecs' blosc and zstd (the same C libraries, so
our frames must be byte-identical to theirs and read back by them), the ``crc32c``
package, ``zlib``/``gzip``.  Hostile streams of every codec give a result code and never
write past the destination (guard bytes after it); a threaded test runs every decoder
on many threads at once.
"""

from __future__ import annotations

import gzip as std_gzip
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import crc32c as ref_crc32c
import numcodecs.blosc
import numcodecs.zstd
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _compress as K
from zarrcy.codecs import _native

CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "zlib")
SHUFFLES = (0, 1, 2)  # noshuffle, shuffle, bitshuffle


@pytest.fixture(autouse=True, scope="module")
def _loaded() -> None:
    for codec in (K.GZIP, K.ZLIB, K.ZSTD, K.BLOSC):
        assert _native.available(codec, True), codec


def chain(codec: int, crc: bool = False, level: int = 1, checksum: bool = False, cname: str = "",
          shuffle: int = 0, typesize: int = 1, blocksize: int = 0) -> tuple:
    return (codec, crc, level, checksum, cname, shuffle, typesize, blocksize)


ZSTD = chain(K.ZSTD)
BLOSC = chain(K.BLOSC, cname="lz4", level=5)


def _data(n: int, itemsize: int = 4, seed: int = 0) -> bytes:
    """A smooth field plus noise: compressible, not trivially."""
    rng = np.random.default_rng(seed)
    k = max(1, n // itemsize)
    v = (np.cumsum(rng.integers(-3, 4, k)) + 1000).astype(f"<u{itemsize}" if itemsize in (1, 2, 4, 8) else "<u4")
    return v.tobytes()[:n].ljust(n, b"\0")


def _decode(c: tuple, src: bytes, n: int, guard: int = 64) -> tuple[int, bytes]:
    """Decode into a view of n bytes followed by guard bytes that must stay untouched."""
    buf = np.full(n + guard, 0xA5, np.uint8)
    code = K.decode_into(c, src, buf[:n])
    assert (buf[n:] == 0xA5).all(), "decoder wrote past the destination"
    return code, buf[:n].tobytes()


def _encode(c: tuple, data: bytes) -> bytes:
    out = np.empty(K.encode_bound(c, len(data)), np.uint8)
    n, code = K.encode_into(c, np.frombuffer(data, np.uint8), out)
    assert code == 0, K.describe(code)
    return out[:n].tobytes()


# -- blosc ----------------------------------------------------------------------------------

@pytest.mark.parametrize("cname", CNAMES)
@pytest.mark.parametrize("shuffle", SHUFFLES)
@pytest.mark.parametrize("typesize", [1, 2, 4, 8, 3])
@pytest.mark.parametrize("blocksize", [0, 256, 4096])
def test_blosc_numcodecs_frames_both_ways(cname: str, shuffle: int, typesize: int, blocksize: int) -> None:
    data = _data(20_000 - 20_000 % typesize, typesize if typesize != 3 else 1)
    theirs = numcodecs.blosc.compress(data, cname.encode(), 5, shuffle, blocksize, typesize)
    code, got = _decode(BLOSC, theirs, len(data))
    assert code == 0 and got == data
    ours = _encode(chain(K.BLOSC, level=5, cname=cname, shuffle=shuffle, typesize=typesize, blocksize=blocksize), data)
    assert ours == bytes(theirs)  # the same c-blosc: the same frame
    assert bytes(numcodecs.blosc.decompress(ours)) == data


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=3000), st.sampled_from(CNAMES), st.sampled_from(SHUFFLES), st.integers(1, 16),
       st.integers(0, 9))
def test_blosc_round_trip_property(data: bytes, cname: str, shuffle: int, typesize: int, clevel: int) -> None:
    c = chain(K.BLOSC, level=clevel, cname=cname, shuffle=shuffle, typesize=typesize)
    enc = _encode(c, data)
    if data:  # numcodecs refuses to decompress an empty chunk (its own check)
        assert bytes(numcodecs.blosc.decompress(enc)) == data
    assert _decode(c, enc, len(data)) == (0, data)


def test_blosc_hostile_headers() -> None:
    data = _data(10_000)
    good = bytes(numcodecs.blosc.compress(data, b"lz4", 5, 1, 0, 4))
    assert _decode(BLOSC, good, len(data))[0] == 0
    # nbytes lying (larger, smaller), cbytes lying, truncated, blocksize larger than the chunk
    big = bytearray(good)
    big[4:8] = struct.pack("<I", len(data) * 100)
    assert _decode(BLOSC, bytes(big), len(data))[0] in (K.BLOSC_SIZE, K.BLOSC_BAD_HEADER)
    small = bytearray(good)
    small[4:8] = struct.pack("<I", len(data) // 2)
    assert _decode(BLOSC, bytes(small), len(data))[0] in (K.BLOSC_SIZE, K.BLOSC_BAD_HEADER)
    assert _decode(BLOSC, good, len(data) - 4)[0] == K.BLOSC_SIZE
    cb = bytearray(good)
    cb[12:16] = struct.pack("<I", len(good) + 1000)
    assert _decode(BLOSC, bytes(cb), len(data))[0] == K.BLOSC_BAD_HEADER
    assert _decode(BLOSC, good[:-10], len(data))[0] == K.BLOSC_BAD_HEADER
    assert _decode(BLOSC, good[:10], len(data))[0] == K.BLOSC_BAD_HEADER
    bs = bytearray(good)
    bs[8:12] = struct.pack("<I", 1 << 30)
    assert _decode(BLOSC, bytes(bs), len(data))[0] == K.BLOSC_BAD_HEADER
    # garbage payload behind a valid header: an error code, never a crash
    junk = bytearray(good)
    junk[16:] = bytes((i * 37) & 0xFF for i in range(len(junk) - 16))
    assert _decode(BLOSC, bytes(junk), len(data))[0] in (0, K.BLOSC_BAD_DATA, K.BLOSC_BAD_HEADER)


def test_blosc_header_facts() -> None:
    data = _data(10_000)
    good = bytes(numcodecs.blosc.compress(data, b"zstd", 5, 2, 1024, 4))
    code, nbytes, blocksize, typesize = K.blosc_header(good)
    assert (code, nbytes, blocksize, typesize) == (0, len(data), 1024, 4)


@pytest.mark.parametrize("cname", CNAMES)
@pytest.mark.parametrize("lo,hi", [(0, 4), (4096, 4100), (5000, 9000), (0, 40_000), (39_996, 40_000)])
def test_blosc_range_decode(cname: str, lo: int, hi: int) -> None:
    data = _data(40_000)
    theirs = bytes(numcodecs.blosc.compress(data, cname.encode(), 5, 1, 2048, 4))
    dst = np.zeros(len(data), np.uint8)
    assert K.decode_range_into(BLOSC, theirs, dst, lo, hi) == 0
    assert dst[lo:hi].tobytes() == data[lo:hi]


# -- zstd -----------------------------------------------------------------------------------

@pytest.mark.parametrize("level", [-5, 0, 1, 3, 9, 19])
@pytest.mark.parametrize("checksum", [False, True])
def test_zstd_numcodecs_frames_both_ways(level: int, checksum: bool) -> None:
    data = _data(100_000)
    theirs = bytes(numcodecs.zstd.compress(data, level, checksum))
    assert _decode(ZSTD, theirs, len(data)) == (0, data)
    ours = _encode(chain(K.ZSTD, level=level, checksum=checksum), data)
    assert bytes(numcodecs.zstd.decompress(ours)) == data
    # byte for byte what the engine's own libzstd writes with the same parameters
    # (backports-zstd's 1.5.7 below Python 3.14: numcodecs' 1.5.6 may differ)
    import sys

    if sys.version_info < (3, 14):
        from backports import zstd as lib
    else:  # pragma: no cover - exercised on 3.14
        from compression import zstd as lib
    P = lib.CompressionParameter
    opts = {P.compression_level: level, P.checksum_flag: int(checksum), P.content_size_flag: 1}
    assert ours == lib.compress(data, options=opts)


def _skippable(payload: bytes, variant: int = 0) -> bytes:
    return struct.pack("<II", 0x184D2A50 + variant, len(payload)) + payload


def _raw_frame(data: bytes) -> bytes:
    """A zstd frame without Frame_Content_Size: one raw block (RFC 8878 3.1.1)."""
    fhd = 0x00  # no content size, not single-segment, no dictionary, no checksum
    window = bytes([0x50])  # Window_Descriptor: 2^(10+10) bytes
    block = struct.pack("<I", 1 | (0 << 1) | (len(data) << 3))[:3] + data
    return struct.pack("<I", 0xFD2FB528) + bytes([fhd]) + window + block


def test_zstd_skippable_and_concatenated_frames() -> None:
    a, b = _data(30_000, seed=1), _data(20_000, seed=2)
    fa, fb = bytes(numcodecs.zstd.compress(a, 1)), bytes(numcodecs.zstd.compress(b, 3, True))
    # issue 23 item 11: a stream starting with a skippable frame is accepted (libzstd does)
    for stream in (_skippable(b"meta") + fa, _skippable(b"", 15) + fa + _skippable(b"x" * 100)):
        assert _decode(ZSTD, stream, len(a)) == (0, a)
    assert _decode(ZSTD, fa + fb, len(a) + len(b)) == (0, a + b)
    assert _decode(ZSTD, fa + _skippable(b"zz") + fb, len(a) + len(b)) == (0, a + b)
    # sizes disagreeing with the chunk
    assert _decode(ZSTD, fa + fb, len(a))[0] == K.ZSTD_TOO_LONG
    assert _decode(ZSTD, fa, len(a) + 1)[0] == K.ZSTD_TOO_SHORT
    assert _decode(ZSTD, fa, len(a) - 1)[0] == K.ZSTD_TOO_LONG
    # a skippable frame claiming more bytes than there are; skippable frames only
    assert _decode(ZSTD, struct.pack("<II", 0x184D2A50, 1000) + b"x", 0)[0] == K.ZSTD_BAD_DATA
    assert _decode(ZSTD, _skippable(b"abc"), 0)[0] == K.ZSTD_BAD_DATA


def test_zstd_content_size_absent_or_wrong() -> None:
    data = _data(5000)
    frame = _raw_frame(data)
    assert _decode(ZSTD, frame, len(data)) == (0, data)
    assert _decode(ZSTD, frame, len(data) - 1)[0] == K.ZSTD_TOO_LONG  # bounded while decoding
    assert _decode(ZSTD, frame, len(data) + 1)[0] == K.ZSTD_TOO_SHORT
    good = bytearray(numcodecs.zstd.compress(data, 1))
    fhd = good[4]
    assert fhd >> 6, "numcodecs writes a content size"
    pos = 5 + (0 if fhd & 0x20 else 1)
    size_len = (1 if fhd & 0x20 else 0, 2, 4, 8)[fhd >> 6]
    claimed = int.from_bytes(good[pos:pos + size_len], "little")
    wrong = bytearray(good)
    wrong[pos:pos + size_len] = (claimed + 1).to_bytes(size_len, "little")
    assert _decode(ZSTD, bytes(wrong), len(data))[0] in (K.ZSTD_BAD_DATA, K.ZSTD_TOO_LONG)
    assert _decode(ZSTD, bytes(wrong), len(data) + 1)[0] == K.ZSTD_BAD_DATA  # fewer bytes than claimed


def test_zstd_dictionary_and_garbage() -> None:
    data = _data(3000)
    # Dictionary_ID_flag = 1: one byte of dictionary id after the (absent) window byte
    frame = bytearray(_raw_frame(data))
    frame[4] |= 0x01
    frame[6:6] = bytes([7])
    assert _decode(ZSTD, bytes(frame), len(data))[0] == K.ZSTD_DICTIONARY
    good = bytes(numcodecs.zstd.compress(data, 1))
    assert _decode(ZSTD, good + b"\x00\x01", len(data))[0] == K.ZSTD_BAD_DATA  # trailing garbage
    assert _decode(ZSTD, good[:-3], len(data))[0] == K.ZSTD_BAD_DATA  # truncated
    assert _decode(ZSTD, b"", 0)[0] == K.ZSTD_BAD_DATA
    assert _decode(ZSTD, b"\x28\xb5\x2f\xfd", 0)[0] == K.ZSTD_BAD_DATA


def test_zstd_bomb_refused_while_decoding() -> None:
    """A frame decoding to 64 MiB checked against a 1 MiB chunk: refused after writing at
    most the chunk (the guard bytes), never allocating the claimed size."""
    bomb = bytes(numcodecs.zstd.compress(bytes(64 << 20), 1))
    assert len(bomb) < 10_000
    assert _decode(ZSTD, bomb, 1 << 20)[0] == K.ZSTD_TOO_LONG
    unsized = _raw_frame(b"\0" * 100_000)
    assert _decode(ZSTD, unsized, 1000)[0] == K.ZSTD_TOO_LONG


@pytest.mark.parametrize("hi", [1, 4096, 70_000, 250_000, 400_000])
def test_zstd_prefix_decode(hi: int) -> None:
    data = _data(400_000)
    frame = bytes(numcodecs.zstd.compress(data, 3))
    dst = np.zeros(len(data), np.uint8)
    assert K.decode_range_into(ZSTD, frame, dst, 0, hi) == 0
    assert dst[:hi].tobytes() == data[:hi]
    # with a checksum every byte is decoded (the checksum is verified)
    checked = bytes(numcodecs.zstd.compress(data, 3, True))
    dst[:] = 0
    assert K.decode_range_into(ZSTD, checked, dst, 0, hi) == 0
    assert dst.tobytes() == data
    bad = bytearray(checked)
    bad[-1] ^= 0xFF
    assert K.decode_range_into(ZSTD, bytes(bad), dst, 0, hi) == K.ZSTD_BAD_DATA


# -- gzip / zlib / crc32c -------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=5000), st.integers(0, 9), st.booleans())
@example(b"", 0, False)
def test_deflate_chains_match_zlib(data: bytes, level: int, crc: bool) -> None:
    for codec, wbits in ((K.GZIP, 31), (K.ZLIB, 15)):
        c = chain(codec, crc, level)
        enc = _encode(c, data)
        body = enc[:-4] if crc else enc
        assert zlib.decompress(body, wbits) == data
        ref = zlib.compress(data, level) if codec == K.ZLIB else std_gzip.compress(data, level)
        if crc:
            ref += struct.pack("<I", ref_crc32c.crc32c(ref))
        assert _decode(c, ref, len(data)) == (0, data)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=10_000), st.integers(0, 2**32 - 1))
def test_crc32c_matches_reference(data: bytes, start: int) -> None:
    assert K.crc32c(data) == ref_crc32c.crc32c(data)
    assert K.crc32c(data, K.crc32c(b"abc")) == ref_crc32c.crc32c(b"abc" + data)


@pytest.mark.parametrize("c", [chain(K.RAW, True), chain(K.ZSTD, True), chain(K.BLOSC, True, 5, cname="lz4")])
def test_crc32c_step(c: tuple) -> None:
    data = _data(5000)
    enc = _encode(c, data)
    assert struct.unpack("<I", enc[-4:])[0] == ref_crc32c.crc32c(enc[:-4])
    assert _decode(c, enc, len(data)) == (0, data)
    bad = bytearray(enc)
    bad[len(bad) // 2] ^= 1
    assert _decode(c, bytes(bad), len(data))[0] == K.CRC32C_MISMATCH
    assert _decode(c, enc[:3], len(data))[0] == K.CRC32C_SHORT


def test_raw_chain_and_argument_checks() -> None:
    assert _decode(chain(K.RAW), b"abcd", 4) == (0, b"abcd")
    assert _decode(chain(K.RAW), b"abcd", 5)[0] == K.RAW_SIZE
    with pytest.raises(ValueError, match="chain"):
        K.decode_into((9, False, 0, False, "", 0, 0, 0), b"", np.empty(0, np.uint8))
    with pytest.raises(ValueError, match="chain"):
        K.decode_into((1, 2), b"", np.empty(0, np.uint8))
    with pytest.raises(ValueError, match="blosc"):
        K.encode_bound(chain(K.BLOSC, level=5, cname=""), 10)
    with pytest.raises(ValueError, match="lo, hi"):
        K.decode_range_into(ZSTD, b"", np.empty(4, np.uint8), 3, 9)
    for code in range(0, 20):
        assert isinstance(K.describe(code), str)


def test_read_only_inputs() -> None:
    data = _data(4000)
    src = np.frombuffer(bytes(numcodecs.zstd.compress(data, 1)), np.uint8)  # read-only
    assert not src.flags.writeable
    out = np.empty(len(data), np.uint8)
    assert K.decode_into(ZSTD, src, out) == 0


# -- threads --------------------------------------------------------------------------------

def test_decoders_on_many_threads() -> None:
    """Every decoder on 8 threads at once: per-thread contexts, no shared state."""
    payloads = []
    for i, (c, enc) in enumerate([
        (ZSTD, lambda d: bytes(numcodecs.zstd.compress(d, 3))),
        (BLOSC, lambda d: bytes(numcodecs.blosc.compress(d, b"lz4", 5, 1, 0, 4))),
        (chain(K.BLOSC, cname="zstd"), lambda d: bytes(numcodecs.blosc.compress(d, b"zstd", 5, 2, 0, 4))),
        (chain(K.GZIP), lambda d: std_gzip.compress(d, 1)),
        (chain(K.ZLIB), lambda d: zlib.compress(d, 1)),
    ]):
        for s in range(4):
            data = _data(50_000 + 4 * s, seed=10 * i + s)
            payloads.append((c, enc(data), data))
    errors: list[str] = []
    barrier = threading.Barrier(8)

    def worker(k: int) -> None:
        barrier.wait()
        for r in range(20):
            c, src, data = payloads[(k + r) % len(payloads)]
            out = np.empty(len(data), np.uint8)
            code = K.decode_into(c, src, out)
            if code or out.tobytes() != data:
                errors.append(f"thread {k} round {r}: code {code}")
            enc = _encode(c if c[0] != K.BLOSC else chain(K.BLOSC, cname="lz4", level=5, shuffle=1, typesize=4), data)
            if _decode(c, enc, len(data)) != (0, data):
                errors.append(f"thread {k} round {r}: round trip")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert errors == []


# -- decoding only what is needed ----------------------------------------------------------

def _zstd_raw_blocks(blocks: list[bytes], last_type: int = 0) -> bytes:
    """A single-segment frame with a 4-byte content size and one raw block per entry;
    the last block's type is ``last_type`` (2: a compressed block, whose content is then
    garbage: the frame's structure is intact, its last block does not decode)."""
    total = sum(len(b) for b in blocks)
    out = struct.pack("<IB", 0xFD2FB528, (2 << 6) | 0x20) + struct.pack("<I", total)
    for k, b in enumerate(blocks):
        last = k == len(blocks) - 1
        btype = last_type if last else 0
        out += struct.pack("<I", int(last) | (btype << 1) | (len(b) << 3))[:3] + b
    return out


def test_zstd_prefix_decode_stops_before_a_bad_tail() -> None:
    """Bytes past the last one needed are never decoded: a frame whose final block is
    invalid still gives its first blocks to a range decode, and fails a whole decode."""
    blocks = [bytes([k]) * 40_000 for k in range(1, 4)] + [b"\xff" * 40_000]
    frame = _zstd_raw_blocks(blocks, last_type=2)
    n = sum(len(b) for b in blocks)
    assert _decode(ZSTD, frame, n)[0] == K.ZSTD_BAD_DATA
    dst = np.zeros(n, np.uint8)
    assert K.decode_range_into(ZSTD, frame, dst, 100, 50_000) == 0
    assert dst[100:50_000].tobytes() == (blocks[0] + blocks[1])[100:50_000]


def test_blosc_range_decode_skips_other_blocks() -> None:
    """A blosc frame with a damaged last block: a range in another block still decodes to
    the right bytes; the whole frame fails or gives other bytes (c-blosc 1 has no
    checksum, so a damaged lz4 stream is not always detected)."""
    data = _data(4 << 20)
    frame = bytearray(numcodecs.blosc.compress(data, b"lz4", 5, 0, 0, 4))
    blocksize = struct.unpack_from("<i", frame, 8)[0]
    nblocks = -(-len(data) // blocksize)
    assert nblocks >= 4 and not frame[2] & 0x02  # several compressed blocks
    starts = struct.unpack_from(f"<{nblocks}i", frame, 16)
    frame[starts[-1]:] = b"\xff" * (len(frame) - starts[-1])  # the last block's streams
    frame = bytes(frame)
    code, whole = _decode(BLOSC, frame, len(data))
    assert code == K.BLOSC_BAD_DATA or whole != data
    dst = np.zeros(len(data), np.uint8)
    lo, hi = blocksize + 100, 2 * blocksize - 100
    assert K.decode_range_into(BLOSC, frame, dst, lo, hi) == 0
    assert dst[lo:hi].tobytes() == data[lo:hi]
    assert not dst[3 * blocksize:].any()  # other blocks were not decoded
