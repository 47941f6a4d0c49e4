"""Linking: generated C -> static binaries (zig), sizes, and container images."""
