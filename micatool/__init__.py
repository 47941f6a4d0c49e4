"""micatool: the toolchain of Mica, a compiled language for machine learning."""

__version__ = "0.1.0"
