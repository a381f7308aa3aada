"""A real Kubernetes control plane on loopback, started as controller-runtime's envtest starts one: shared by
the demo (`kafka-offset-demo --real-cluster`, and `--stay-up` where the control plane is built) and the tests
(tests/support/kube_cluster.py, kube_fixtures.py), so it lives here, where both may import it (the product
imports neither).

etcd (a temp data dir, no fsync), kube-apiserver (a serving certificate and an admin client certificate in
system:masters from a CA made here with the `cryptography` package, RBAC authorization, service-account
signing keys and issuer) and kube-controller-manager (garbage collector, namespaces, deployments and
replica sets, stateful sets, service accounts and their tokens). There is no scheduler and no kubelet:
pods stay Pending and no container runs, which neither the demo nor the tests need.

The binaries are built from the Go module proxy by tests/support/kube_build.py (`scripts/dev.sh test` or
`scripts/dev.sh cluster`, where Go is installed) into ~/.cache/kafka-offset-operator/kube/<version>/; this
module only finds and runs them (`built_binaries`).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import os
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .ports import free_port
from .processes import dies_with_parent

SERVERS = ("etcd", "kube-apiserver", "kube-controller-manager")


def cache_root() -> Path:
    """Where built control planes live, one folder per Kubernetes version (KOO_KUBE_CACHE overrides it)."""
    base = os.environ.get("KOO_KUBE_CACHE") or str(Path.home() / ".cache" / "kafka-offset-operator" / "kube")
    return Path(base)


def built_binaries(root: Path | None = None) -> Path | None:
    """The newest cached version folder holding all three servers (None when nothing is built here)."""
    root = root or cache_root()
    if not root.is_dir():
        return None
    found = [d for d in root.iterdir() if d.is_dir() and all(os.access(d / s, os.X_OK) for s in SERVERS)]
    return max(found, key=lambda d: tuple(int(n) for n in d.name.lstrip("v").split(".") if n.isdigit()),
               default=None)


CONTROLLERS = (
    "garbage-collector-controller", "namespace-controller", "deployment-controller", "replicaset-controller",
    "statefulset-controller", "serviceaccount-controller", "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller", "clusterrole-aggregation-controller",
    "validatingadmissionpolicy-status-controller",
    "job-controller", "ttl-after-finished-controller",  # the Job analysis engine's Jobs (tests/integration/operator/job_standin.py)
)
ISSUER = "https://kubernetes.default.svc.cluster.local"
# What a ControlPlane(audit=True) logs: every request of a service account (an operator on its token: the
# controllers and the tests' admin are not service accounts, so the log stays small), at Metadata level
# (verb, resource, subresource, name, the authorizer's decision, timestamps), and with the request's body for
# writes to kafkaoffsets.dev objects (which status fields a patch set).
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Request", "userGroups": ["system:serviceaccounts"], "verbs": ["create", "update", "patch"],
         "resources": [{"group": "kafkaoffsets.dev"}]},
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None"},
    ],
}




# -- certificates


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def terminate(proc: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM (a clean shutdown), then SIGKILL if it has not exited within `timeout` seconds: a process hung
    in its shutdown must not hang whoever stops it. Also the tests' way to stop the operator's process."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, PEM-encoded."""

    cert: bytes
    key: bytes


class CertificateAuthority:
    """The cluster's one CA: it signs the API server's serving certificate and every client certificate (the
    API server trusts it through --client-ca-file: a certificate's CN is the user, its O entries the groups)."""

    def __init__(self) -> None:
        self.key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-offset-operator-test-ca")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
                     .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                     .not_valid_after(now + datetime.timedelta(days=7))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, organizations: Sequence[str] = (), server: bool = False) -> Issued:
        """A client certificate for user `common_name` in groups `organizations`, or (`server`) the serving
        certificate for localhost and 127.0.0.1."""
        key = _key()
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        now = datetime.datetime.now(datetime.UTC)
        builder = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(self.cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=7))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        else:
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Issued(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


# -- the API as a client


class ApiError(Exception):
    """The API server refused a request: `status` is its HTTP code, `body` its Status object (a dict)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(f"HTTP {status}: {body.get('message', body)}")
        self.status = status
        self.body = body


class Api:
    """A small synchronous JSON client of the real API server (admin or a named user), for tests and the
    harness. Paths are the API's own (`/api/v1/namespaces`, `/apis/GROUP/VERSION/...`)."""

    def __init__(self, url: str, ca: bytes, client: Issued | None = None, token: str | None = None) -> None:
        self.url = url
        self.token = token
        self.context = ssl.create_default_context(cadata=ca.decode())
        if client is not None:
            with tempfile.TemporaryDirectory() as tmp:  # ssl loads a client certificate from files only
                cert, key = Path(tmp) / "c.crt", Path(tmp) / "c.key"
                cert.write_bytes(client.cert)
                key.write_bytes(client.key)
                self.context.load_cert_chain(cert, key)

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json", timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.context) as rsp:
                text = rsp.read().decode()
        except urllib.error.HTTPError as exc:
            raw = exc.read().decode(errors="replace")
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {"message": raw}
            raise ApiError(exc.code, parsed if isinstance(parsed, dict) else {"message": raw}) from None
        return json.loads(text) if text else None

    def apply(self, path: str, obj: Mapping[str, Any], manager: str = "tests") -> Any:
        """Server-side apply of `obj` at `path` (the object's own path, with its name)."""
        return self.request("PATCH", f"{path}?fieldManager={manager}&force=true", dict(obj),
                            "application/apply-patch+yaml")


# -- the control plane


def kubeconfig(url: str, ca: bytes, user: str, client: Issued | None = None, token: str | None = None,
               namespace: str | None = None) -> dict[str, Any]:
    """A kubeconfig document for `user` (a client certificate or a bearer token), credentials embedded."""
    creds: dict[str, str] = {}
    if client is not None:
        creds = {"client-certificate-data": base64.b64encode(client.cert).decode(),
                 "client-key-data": base64.b64encode(client.key).decode()}
    if token is not None:
        creds = {"token": token}
    context: dict[str, str] = {"cluster": "real", "user": user}
    if namespace:
        context["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Config", "current-context": "real",
            "clusters": [{"name": "real", "cluster": {"server": url,
                                                      "certificate-authority-data": base64.b64encode(ca).decode()}}],
            "users": [{"name": user, "user": creds}], "contexts": [{"name": "real", "context": context}]}


class ControlPlane:
    """etcd, kube-apiserver and kube-controller-manager as processes on loopback, in `workdir` (their data,
    certificates and logs). `start()` returns once /readyz answers ok; `stop()` ends all three."""

    def __init__(self, binaries: Path, workdir: Path, audit: bool = False) -> None:
        """`audit`: kube-apiserver writes an audit log (`audit_log`, AUDIT_POLICY) of what service accounts
        ask: the tests read from it which requests an operator on its ServiceAccount's token sent, in what
        order, and what the authorizer answered (as the emulator's request log does for the emulator)."""
        self.binaries = binaries
        self.dir = workdir
        self.audit_log: Path | None = workdir / "audit.log" if audit else None
        self.ca = CertificateAuthority()
        self.admin = self.ca.issue("admin", ["system:masters"])
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kubeconfig = workdir / "admin.kubeconfig"
        self.api = Api(self.url, self.ca.pem, self.admin)

    def _write(self, name: str, data: bytes) -> str:
        path = self.dir / name
        path.write_bytes(data)
        path.chmod(0o600)
        return str(path)

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
        self.procs[name] = subprocess.Popen([str(self.binaries / name), *args], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            preexec_fn=dies_with_parent())
        log.close()

    def log(self, name: str, tail: int = 4000) -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    def _alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log(name)}")

    def start(self, timeout: float = 180) -> ControlPlane:
        self.dir.mkdir(parents=True, exist_ok=True)
        ca = self._write("ca.crt", self.ca.pem)
        serving = self.ca.issue("kube-apiserver", server=True)
        sa_key = _key()
        sa_private = self._write("sa.key", _pem_key(sa_key))
        sa_public = self._write("sa.pub", sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        client_port, peer_port = free_port(), free_port()
        etcd_url, peer_url = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
        self._spawn("etcd", [
            f"--data-dir={self.dir / 'etcd'}", "--name=default", f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}", f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}", f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true", "--log-level=warn"])
        self._spawn("kube-apiserver", [
            f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}", f"--tls-cert-file={self._write('apiserver.crt', serving.cert)}",
            f"--tls-private-key-file={self._write('apiserver.key', serving.key)}", f"--client-ca-file={ca}",
            "--authorization-mode=RBAC", "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
            "--disable-admission-plugins=ServiceAccount", f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={sa_public}", f"--service-account-signing-key-file={sa_private}",
            "--endpoint-reconciler-type=none", "--v=0", *self._audit_flags()])
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.url, self.ca.pem, "admin", self.admin)))
        self.kubeconfig.chmod(0o600)
        self._wait_ready(timeout)
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={self.kubeconfig}", f"--authentication-kubeconfig={self.kubeconfig}",
            f"--authorization-kubeconfig={self.kubeconfig}", "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}", "--leader-elect=false", f"--controllers={','.join(CONTROLLERS)}",
            f"--service-account-private-key-file={sa_private}", f"--root-ca-file={ca}",
            "--use-service-account-credentials=false", "--concurrent-gc-syncs=5", "--v=0"])
        self._wait_controllers(timeout)
        return self

    def _audit_flags(self) -> list[str]:
        if self.audit_log is None:
            return []
        policy = self._write("audit-policy.yaml", yaml.safe_dump(AUDIT_POLICY).encode())
        # the log backend's default mode, blocking: an event is written while its request is served, no batching
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-maxsize=0",
                "--audit-log-format=json"]

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._alive()
            try:
                self.api.request("GET", "/readyz", timeout=5)
                return
            except ApiError as exc:
                last = str(exc)
            except (OSError, ValueError) as exc:  # not listening yet; /readyz answers "ok", not JSON
                if isinstance(exc, ValueError):
                    return
                last = str(exc)
            time.sleep(0.2)  # the polling cadence; the deadline decides
        raise RuntimeError(f"kube-apiserver not ready after {timeout}s ({last}):\n{self.log('kube-apiserver')}")

    def _wait_controllers(self, timeout: float) -> None:
        """The controller manager is working once the default namespace has its service account (the
        serviceaccount controller made it) with the root CA published next to it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._alive()
            try:
                self.api.request("GET", "/api/v1/namespaces/default/serviceaccounts/default", timeout=5)
                self.api.request("GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt", timeout=5)
                return
            except ApiError as exc:
                if exc.status != 404:
                    raise
            time.sleep(0.2)
        raise RuntimeError(f"kube-controller-manager not working after {timeout}s:\n{self.log('kube-controller-manager')}")

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            proc = self.procs.pop(name, None)
            if proc is not None:
                terminate(proc, 20)

    # -- users

    def user_kubeconfig(self, path: Path, user: str, groups: Sequence[str] = (), namespace: str | None = None) -> Path:
        """A kubeconfig authenticating as `user` in `groups` with a client certificate from the cluster's CA:
        what RBAC allows that user is all it may do (no impersonation involved)."""
        issued = self.ca.issue(user, list(groups))
        path.write_text(yaml.safe_dump(kubeconfig(self.url, self.ca.pem, user, issued, namespace=namespace)))
        path.chmod(0o600)
        return path

    def user_api(self, user: str, groups: Sequence[str] = ()) -> Api:
        """An API client authenticating as `user` in `groups` (a client certificate)."""
        return Api(self.url, self.ca.pem, self.ca.issue(user, list(groups)))

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A token for ServiceAccount `namespace/name` from the TokenRequest API, as the kubelet gets one."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds}}
        answer = self.api.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body)
        return str(answer["status"]["token"])

    def service_account_kubeconfig(self, path: Path, namespace: str, name: str) -> Path:
        """A kubeconfig acting as ServiceAccount `namespace/name` (a TokenRequest token)."""
        token = self.service_account_token(namespace, name)
        doc = kubeconfig(self.url, self.ca.pem, f"system:serviceaccount:{namespace}:{name}", token=token,
                         namespace=namespace)
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return path

    def create_namespace(self, name: str) -> None:
        self.api.request("POST", "/api/v1/namespaces",
                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
