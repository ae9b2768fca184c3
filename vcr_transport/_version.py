"""The version: a leaf, so that what needs it (the CLI, the parse cache, HAR's creator) needs nothing else."""

__all__ = ["__version__"]

__version__ = "0.1.0"
