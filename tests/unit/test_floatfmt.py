"""The C float formatter: shortest round-trip digits (those of Python's repr),
positional, for over a million doubles of every kind."""

import struct

import numpy as np

from tsbench.data.native import format_doubles


def _norm(text: str) -> tuple[str, int]:
    """(significant digits, decimal exponent of the first one) of a decimal text."""
    t = text.lstrip("-")
    exp = 0
    if "e" in t:
        t, e = t.split("e")
        exp = int(e)
    intpart, _, frac = t.partition(".")
    digits = intpart + frac
    point = len(intpart) + exp
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    stripped = stripped.rstrip("0")
    return (stripped or "0"), (point if stripped else 0)


def _doubles() -> np.ndarray:
    rng = np.random.default_rng(20261121)
    bits = [
        rng.integers(0, 2 ** 64, 400_000, dtype=np.uint64),                        # every exponent
        rng.integers(1, 2 ** 52, 100_000, dtype=np.uint64),                        # subnormals
        rng.integers(1, 2 ** 20, 20_000, dtype=np.uint64),                         # tiny subnormals
        np.array([1, 2 ** 52 - 1, 2 ** 52, 0x7FEFFFFFFFFFFFFF, 0, 2 ** 63], dtype=np.uint64),
    ]
    arr = [np.concatenate(bits).view(np.float64)]
    arr.append(rng.uniform(0, 100, 200_000))
    arr.append(rng.uniform(0, 1, 100_000))
    arr.append(np.ldexp(1.0, np.arange(-1074, 1024)))                               # powers of two
    p10 = np.array([float(f"1e{k}") for k in range(-323, 309)])
    arr += [p10, np.nextafter(p10, np.inf), np.nextafter(p10, -np.inf)]
    arr.append(rng.integers(0, 2 ** 53, 50_000).astype(np.float64))
    arr.append(np.arange(0, 100_000, dtype=np.float64))
    k = rng.integers(1, 10 ** 7, 100_000)
    p = rng.integers(0, 12, 100_000)
    arr.append(k / 10.0 ** p)
    arr.append(np.trunc(rng.uniform(-90, 90, 50_000) * 1e5) / 1e5)
    arr.append(-rng.uniform(0, 1e6, 20_000))
    v = np.concatenate(arr)
    return v[np.isfinite(v)]


def test_shortest_round_trip_for_a_million_doubles():
    v = _doubles()
    assert len(v) >= 1_000_000
    text, ends = format_doubles(v)
    s = text.decode()
    starts = np.concatenate([[0], ends[:-1]])
    bad = []
    for x, a, b in zip(v.tolist(), starts.tolist(), ends.tolist()):
        t = s[a:b]
        if "e" in t or "E" in t or t.endswith(".") or struct.pack("<d", float(t)) != struct.pack("<d", x) \
                or _norm(t) != _norm(repr(x)):
            bad.append((x, t))
            if len(bad) > 5:
                break
    assert not bad, bad


def test_positional_forms():
    cases = [(0.0, "0"), (-0.0, "-0")] + list({123.0: "123", 1e22: "1" + "0" * 22, 1e-7: "0.0000001", 0.5: "0.5",
             12.25: "12.25", -0.001: "-0.001", 5e-324: "0." + "0" * 323 + "5", 0.1: "0.1", 1 / 3: "0.3333333333333333",
             2.0 ** 53: "9007199254740992", 1.7976931348623157e308: "17976931348623157" + "0" * 292}.items())
    text, ends = format_doubles(np.array([c[0] for c in cases], dtype=np.float64))
    starts = [0] + ends[:-1].tolist()
    got = [text[a:b].decode() for a, b in zip(starts, ends.tolist())]
    assert got == [c[1] for c in cases]


def test_positional_trailing_zeros():
    """Zeros of the shortest digits: dropped after the point, kept (and added) before it."""
    cases = [(100.5, "100.5"), (1.5e-5, "0.000015"), (1234567.0, "1234567"), (2.0 ** 60, "1152921504606847000"),
             (123456789012345680.0, "123456789012345680"), (0.30000000000000004, "0.30000000000000004"),
             (1000000000000000.1, "1000000000000000.1"), (2.0 ** 53 + 2, "9007199254740994"), (1e-6, "0.000001"),
             (-250.0, "-250"), (0.0625, "0.0625"), (4503599627370495.5, "4503599627370495.5")]
    text, ends = format_doubles(np.array([c[0] for c in cases], dtype=np.float64))
    starts = [0] + ends[:-1].tolist()
    got = [text[a:b].decode() for a, b in zip(starts, ends.tolist())]
    assert got == [c[1] for c in cases]
