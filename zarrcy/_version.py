"""The package version (one place; ``zarrcy.__version__`` re-exports it)."""

__version__ = "0.1.0"
