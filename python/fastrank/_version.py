"""The package version (one place: the package, model files and the CLI read it here)."""

__version__ = "0.1.0"
