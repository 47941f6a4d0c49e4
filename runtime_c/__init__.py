"""The C runtime, shipped inside the micatool package as data (see micatool/link/build.py)."""
