"""Linking: generated C -> static binaries (zig), their sizes, and container images."""
