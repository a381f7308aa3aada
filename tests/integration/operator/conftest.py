"""Fixtures for the operator tests: a Kubernetes API, a kubeconfig and operators under Kopf, one of each per
test (Kafka is tests/conftest.py's). The machinery is in operator_harness.py (a uniquely named module,
importable by tests, whose context managers also serve module-scoped sagas).

Which API: a module marked `pytestmark = pytest.mark.real_api` runs on the real kube-apiserver and
kube-controller-manager (the install applied once per module, `kube` the admin's client in a fresh namespace
per test, the operator on the installed ServiceAccount's token, watching that namespace: installed_api.py);
every other module runs on kmock's emulated API (`cluster`), which stays where only it can go (held writes,
injected faults, request logs: docs/testing.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from installed_api import InstalledApi, installed_api, release
from operator_harness import EmulatedCluster, Kube, Operators, OperatorThread, emulated_cluster, fast_options

from kafka_offset_operator.context import OperatorOptions


def on_real_api(request: pytest.FixtureRequest) -> bool:
    return request.node.get_closest_marker("real_api") is not None


@pytest.fixture(scope="module")
def api(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[InstalledApi]:
    """The install applied and its ServiceAccount's token, once per real_api module."""
    request.getfixturevalue("real_crds")
    with installed_api(request.getfixturevalue("real_cluster"), tmp_path_factory.mktemp("kube")) as installed:
        yield installed


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    """kmock's emulated API (a real_api module's test that needs the emulator asks for it by name)."""
    with emulated_cluster() as c:
        yield c


@pytest.fixture
def kube(request: pytest.FixtureRequest) -> Iterator[Kube]:
    """The admin's client. On the real API, our objects' finalizers go before the namespace does: the operator
    that would remove them is stopped by then."""
    if not on_real_api(request):
        yield Kube(request.getfixturevalue("cluster").url)
        return
    api: InstalledApi = request.getfixturevalue("api")
    client = Kube(api.plane.url, request.getfixturevalue("real_namespace"), api.plane.api.context)
    yield client
    release(client)


@pytest.fixture
def kubeconfig(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The admin's kubeconfig (a person on call runs the CLI with it)."""
    if on_real_api(request):
        return request.getfixturevalue("api").plane.kubeconfig
    return request.getfixturevalue("cluster").write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def operator_options(request: pytest.FixtureRequest) -> OperatorOptions:
    """start_operator's operator: on the real API, the installed ServiceAccount's token watching the test's
    namespace; on the emulator, the admin's kubeconfig."""
    if on_real_api(request):
        kube: Kube = request.getfixturevalue("kube")
        return request.getfixturevalue("api").options(namespaces=(kube.namespace,))
    return fast_options(request.getfixturevalue("kubeconfig"))


@pytest.fixture
def start_operator(operator_options: OperatorOptions) -> Iterator[Callable[..., OperatorThread]]:
    """Start (and, at teardown, stop) operators; a test may stop one and start another (a restart)."""
    operators = Operators(operator_options)
    yield operators.start
    operators.close()
