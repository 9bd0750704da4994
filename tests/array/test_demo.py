"""`zarrcy demo` (the README's first command) writes, reads back and verifies."""

from zarrcy.cli import main


def test_demo_small(tmp_path, capsys):
    out = str(tmp_path / "demo.zarr")
    assert main(["demo", "--output", out, "--size", "small"]) == 0
    text = capsys.readouterr().out
    assert "verified: all arrays read back as written" in text
    for name in ("dense/gzip1", "volume/sharded", "quantized/uint8", "convert v2->v3"):
        assert name in text
    assert main(["check", out, "--data"]) == 0
