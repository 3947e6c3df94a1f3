"""Every registered connector kind can be stored: it is one of the model's choices and passes the
database's check constraint, so an admin (or a service) can create a connector of that kind."""

from __future__ import annotations

import pytest

from knowledge.connectors.registry import kind_names
from knowledge.models import Connector
from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_every_registered_kind_is_a_model_choice() -> None:
    assert set(kind_names()) <= set(Connector.Kind.values)


@pytest.mark.parametrize("kind", kind_names())
def test_a_connector_of_each_kind_passes_model_validation(kind: str) -> None:
    connector = Connector(tenant=TenantFactory.create(), name=f"a {kind}", kind=kind)
    assert Connector._meta.get_field("kind").clean(kind, connector) == kind
    connector.save()  # the database's check constraint
    assert Connector.objects.get(pk=connector.pk).kind == kind
