"""Throwaway TLS material for tests and demos of the sandbox's SSL listeners, made with the `openssl` command.

A private CA signs a server certificate (for 127.0.0.1 and localhost, so clients that check host names
accept it) and a client certificate (for ssl.client.auth). Everything is made fresh in a directory the
caller owns (a test's tmp_path), keys 0600, valid for two days: no key is ever committed or reused.
Python's `ssl` cannot make certificates and the `cryptography` package is not a dependency, so this drives
the OpenSSL 3 command line (`req -x509 -CA` signs in one step).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
_DAYS = ("-days", "2")


@dataclass(frozen=True)
class Certificates:
    """PEM files of one throwaway CA and the certificates it signed."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def ca_pem(self) -> bytes:
        return self.ca_cert.read_bytes()


def _openssl(*args: str) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("the openssl command is needed to make test certificates (Debian package openssl)")
    done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def make_certificates(
    directory: str | os.PathLike[str],
    *,
    name: str = "kafka-sandbox test",
    hosts: Sequence[str] = ("127.0.0.1", "localhost"),
    client_name: str = "offsets-client",
) -> Certificates:
    """A CA named `name`, a server certificate for `hosts` and a client certificate (CN=`client_name`),
    all in `directory`. Two calls give two unrelated CAs (for "wrong CA" tests)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = Certificates(
        *(out / f for f in ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"))
    )
    _openssl(
        "req", "-x509", *_KEY, *_DAYS, "-keyout", str(files.ca_key), "-out", str(files.ca_cert),
        "-subj", f"/CN={name} CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    san = ",".join(f"IP:{h}" if h.replace(".", "").isdigit() or ":" in h else f"DNS:{h}" for h in hosts)
    for cert, key, subject, usage, extra in (
        (files.server_cert, files.server_key, hosts[0], "serverAuth", ("-addext", f"subjectAltName={san}")),
        (files.client_cert, files.client_key, client_name, "clientAuth", ()),
    ):
        _openssl(
            "req", "-x509", *_KEY, *_DAYS, "-CA", str(files.ca_cert), "-CAkey", str(files.ca_key),
            "-keyout", str(key), "-out", str(cert), "-subj", f"/CN={subject}",
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "keyUsage=critical,digitalSignature",
            "-addext", f"extendedKeyUsage={usage}", *extra,
        )  # fmt: skip
    for key in (files.ca_key, files.server_key, files.client_key):
        key.chmod(0o600)
    return files
