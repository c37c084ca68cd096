"""Philox4x32-10 and rand64: the known answers of docs/ops/conventions.md on the reference and the C++ header."""

import pytest

from fastspec import arrays
from fastspec import reference as ref

PHILOX_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]
RAND64_ANSWERS = [
    ((0, 0, 0), 0xE169C58D6627E8D5),
    ((0, 0, ref.STREAM_TARGET), 0xF08D6EAA844515E1),
    ((0, 0, ref.STREAM_TOPP), 0xB68267590661D677),
    ((0, 2**32, ref.STREAM_TARGET), 0x5BBD079A79D48E11),
    ((2**32, 0, ref.STREAM_TARGET), 0x114B24477F6C13FF),
    ((-1, -1, ref.STREAM_TARGET), 0x340725878BCD8398),
]


@pytest.mark.parametrize("counter, key, expected", PHILOX_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    assert ref.philox4x32_10(counter, key) == expected
    assert arrays.module().philox4x32_10(*counter, *key) == expected


@pytest.mark.parametrize("args, expected", RAND64_ANSWERS)
def test_rand64_known_answers(args, expected):
    assert ref.rand64(*args) == expected
    assert arrays.module().rand64(*args) == expected


def test_streams_and_positions_are_independent():
    values = {
        arrays.module().rand64(seed, pos, stream) for seed in range(4) for pos in range(4) for stream in range(1, 6)
    }
    assert len(values) == 4 * 4 * 5
