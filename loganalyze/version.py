"""The package's version, at the bottom of the layers: reports stamp it (report/model.py)."""

__version__ = "0.1.0"
