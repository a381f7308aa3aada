"""The Kubernetes client keeps a connection for every thread that calls it at once (runtime.api_client_config):
with urllib3's default of 10, a thousand OffsetDeletions under load dropped connections with a warning each."""

from pathlib import Path

import urllib3

from kafka_offset_operator.adapters.kube import Kube
from kafka_offset_operator.context import OperatorOptions
from kafka_offset_operator.reconcilers.policy_scheduler import SHARED_VISITS
from kafka_offset_operator.runtime import api_client_config, build_settings, kopf_threads

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ns}}]
current-context: x
"""


def test_pool_is_as_wide_as_the_threads_calling_the_api(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    for concurrency in (1, 8, 64):
        options = OperatorOptions(namespaces=("ns",), kubeconfig=path, kafka_concurrency=concurrency)
        config = api_client_config(options)
        assert build_settings(options).execution.max_workers == kopf_threads(options)
        threads = kopf_threads(options) + SHARED_VISITS
        assert config.connection_pool_maxsize == threads
        kube = Kube(config)
        pool = kube._client.rest_client.pool_manager
        assert isinstance(pool, urllib3.PoolManager)
        assert pool.connection_pool_kw["maxsize"] == threads
        kube.close()
