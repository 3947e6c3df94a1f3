"""The vector text form PostgreSQL receives: every float4 arrives exactly, a float64 as float4 would."""

from __future__ import annotations

import random
import struct

import pytest
from django.db import connection

from knowledge.store.sql import vector_literal

pytestmark = pytest.mark.django_db


def float4(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def stored(values: list[float]) -> list[float]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::vector::real[]", [vector_literal(values)])
        return [float4(v) for v in cursor.fetchone()[0]]  # real arrives as its shortest text


def test_every_float4_arrives_exactly() -> None:
    rng = random.Random(11)
    values = [float4(rng.gauss(0, 0.05)) for _ in range(384)]
    values += [float4(v) for v in (3.4e38, -3.4e38, 1.2e-38, 1e-45, -0.0, 1.0, 0.1, 123456.789)]
    assert stored(values) == values


def test_a_float64_lands_on_its_float4_or_the_next_one() -> None:
    rng = random.Random(12)
    values = [rng.gauss(0, 1) * 10 ** rng.randint(-20, 20) for _ in range(2000)]
    for got, value in zip(stored(values), values, strict=True):
        assert abs(got - float4(value)) <= abs(float4(value)) * 2**-23


def test_integers_and_the_text_form() -> None:
    assert vector_literal([1, 0.5, -2]) == "[1,0.5,-2]"
    assert stored([1, 2, 3]) == [1.0, 2.0, 3.0]
