"""The emulated API (kafka_offset_demo.api_validation: schema, defaults, CEL rules, which the demo and the
emulator-based tests rely on) against the real kube-apiserver with crds/ installed: for generated specs of
every kind (valid ones and near misses, tests/support/crd_strategies.py), both admit the same specs, store
the same defaulted spec, and refuse the others with the same code. (Their messages agree on the cases
test_api_validation.py and tests/unit/emulator check; not on every generated one: kube-openapi 1.36 also
names the missing fields of a oneOf's branches, which the emulator does not.) The real one is asked with
dryRun=All, so nothing is stored and one namespace serves every example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crd_strategies import near_miss_specs, valid_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kube_cluster import ApiError, ControlPlane

from kafka_offset_demo.api_validation import BadRequest, Invalid, ResourceSchema
from kafka_offset_operator.model.api import DELETION_KIND, POLICY_KIND, RESET_KIND
from kafka_offset_operator.model.crds import build_crds

RESOURCES = {crd["spec"]["names"]["kind"]: ResourceSchema.from_crd(crd, crd["spec"]["versions"][0])
             for crd in build_crds().values()}
PLURALS = {DELETION_KIND: "offsetdeletions", POLICY_KIND: "consumergroupoffsetpolicies", RESET_KIND: "offsetresets"}
EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


def real_answer(plane: ControlPlane, namespace: str, obj: dict[str, Any]) -> tuple[int, Any]:
    """(201, the spec it would store) or (the refusal's code, its message)."""
    path = f"/apis/kafkaoffsets.dev/v1alpha1/namespaces/{namespace}/{PLURALS[obj['kind']]}?dryRun=All"
    try:
        return 201, plane.api.request("POST", path, obj)["spec"]
    except ApiError as exc:
        return exc.status, exc.body.get("message")


def emulated_answer(obj: dict[str, Any]) -> tuple[int, Any]:
    try:
        return 201, RESOURCES[obj["kind"]].admit(obj, None)["spec"]
    except Invalid as exc:
        return 422, exc.message
    except BadRequest as exc:
        return 400, str(exc)


@pytest.mark.slow
@EXAMPLES
@pytest.mark.parametrize("kind", [DELETION_KIND, RESET_KIND, POLICY_KIND])
@given(data=st.data())
def test_the_emulated_api_admits_and_refuses_as_the_real_one(
        real_cluster: ControlPlane, real_crds: Path, real_namespace: str, kind: str, data: st.DataObject) -> None:
    spec = data.draw(st.one_of(valid_specs(kind), near_miss_specs(kind)))
    obj = {"apiVersion": "kafkaoffsets.dev/v1alpha1", "kind": kind, "metadata": {"name": "x", "namespace": real_namespace},
           "spec": spec}
    emulated, real = emulated_answer(obj), real_answer(real_cluster, real_namespace, obj)
    assert emulated[0] == real[0], (emulated, real)  # both admit it, or both refuse it with the same code
    if real[0] == 201:
        assert emulated[1] == real[1]  # the same spec stored, defaults filled in alike
