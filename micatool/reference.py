"""Python twins of runtime behaviour that programs outside Mica need to reproduce.

`Generator` draws the numbers a Mica program draws after `Seed(s)`, as
docs/language.md documents them (SplitMix64 of the seed and a counter), so a
Python script can rebuild the batches, data or dropout masks a Mica program used.
"""

from __future__ import annotations

import math

GAMMA = 0x9E3779B97F4A7C15
MASK = 2**64 - 1


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class Generator:
    """Mica's generator after Seed(seed): Uniform, RandomInt and Dropout's masks, bit for bit."""

    def __init__(self, seed: int):
        self.key = mix((seed + GAMMA) & MASK)
        self.counter = 0

    def draw(self) -> int:
        value = mix((self.key + self.counter * GAMMA) & MASK)
        self.counter += 1
        return value

    def uniform(self, low: float, high: float) -> float:
        return low + (high - low) * ((self.draw() >> 11) * 2.0**-53)

    def random_int(self, n: int) -> int:
        m = self.draw() * n
        low = m & MASK
        if low < n:
            threshold = (2**64 - n) % n
            while low < threshold:
                m = self.draw() * n
                low = m & MASK
        return m >> 64

    def dropout_mask(self, n: int, p: float) -> list[bool]:
        """Dropout(x, p)'s verdicts on n elements, one draw each: kept when the draw's
        top 53 bits reach ceil(p * 2^53), so with probability 1 - p."""
        threshold = math.ceil(p * 2**53)
        return [self.draw() >> 11 >= threshold for _ in range(n)]
