"""A stand-in for the kubelet, for the Job engine's tests: these machines run no kubelet (and no scheduler),
so the real kube-controller-manager's Job controller creates each Job's pod and nothing runs it. The stand-in
does what a kubelet would for those pods: it runs the pod's container command as a local process (the Spark
image's paths mapped to this checkout's: spark-submit from the venv's pyspark, job.py from spark/), with the
container's environment (secretKeyRefs resolved from the real Secrets) and the token of the pod's
ServiceAccount (KUBECONFIG), then writes the pod's status as a kubelet does: Running, then Succeeded or
Failed with the container's exit code. The real Job controller turns that into the Job's conditions
(Complete; Failed with BackoffLimitExceeded, PodFailurePolicy or DeadlineExceeded), so the engine reads what
a cluster would write.

Test controls: `behaviour(pod) -> "run" | "hold" | "never" | int`: run the command (the default), hold the
pod Pending until `release()` (an operator restart), keep it Pending until it is deleted (a deadline), or end
it at once with that exit code.
"""

from __future__ import annotations

import base64
import collections
import datetime
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kube_cluster import ControlPlane
from operator_harness import ROOT, Kube, KubeApiError

IMAGE_SPARK_SUBMIT = "/opt/spark/bin/spark-submit"
IMAGE_JOB_PY = "/opt/kafka-offset-operator/spark/offset_expiry/job.py"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
Behaviour = Callable[[dict[str, Any]], "str | int"]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class JobStandIn:
    def __init__(self, kube: Kube, plane: ControlPlane, workdir: Path, poll_s: float = 0.2) -> None:
        self.kube = kube
        self.plane = plane
        self.workdir = workdir
        self.poll_s = poll_s
        self.behaviour: Behaviour = lambda pod: "run"
        self.pods: list[str] = []  # the pods it saw, in order
        self.jobs: list[str] = []  # their Jobs (one per pod: a Job retried has several)
        self.exits: dict[str, int] = {}  # pod -> its container's exit code
        self._released = threading.Event()
        self._handled: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubelet-standin", daemon=True)
        self._errors: list[BaseException] = []
        self._kubeconfigs: dict[str, Path] = {}

    def start(self) -> JobStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._released.set()
        self._thread.join(timeout=60)
        if self._errors:
            raise AssertionError(f"the kubelet stand-in failed: {self._errors[0]!r}") from self._errors[0]

    def release(self) -> None:
        """Held pods run now (and later ones are not held)."""
        self._released.set()

    def hold(self) -> None:
        self._released.clear()

    # -- the kubelet

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                pods = self.kube.list("v1", "pods")
            except KubeApiError as exc:
                self._errors.append(exc)
                return
            for pod in pods:
                uid = pod["metadata"]["uid"]
                if uid in self._handled or pod["metadata"].get("deletionTimestamp"):
                    continue
                self._handled.add(uid)
                self.pods.append(pod["metadata"]["name"])
                self.jobs.append((pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, ""))
                threading.Thread(target=self._guarded, args=(pod,), daemon=True).start()
            self._stop.wait(self.poll_s)

    def _guarded(self, pod: dict[str, Any]) -> None:
        try:
            self._run(pod)
        except KubeApiError as exc:
            if exc.status not in (404, 409, 422):  # deleted (a deadline, the Job deleted): nothing to report to
                self._errors.append(exc)
        except BaseException as exc:
            self._errors.append(exc)

    def _gone(self, name: str) -> bool:
        pod = self.kube.find("v1", "pods", name)
        return pod is None or bool(pod["metadata"].get("deletionTimestamp"))

    def _status(self, pod: dict[str, Any], phase: str, state: dict[str, Any]) -> None:
        container = pod["spec"]["containers"][0]
        status = {"phase": phase, "startTime": _now(),
                  "containerStatuses": [{"name": container["name"], "image": container["image"], "imageID": "",
                                         "ready": phase == "Running", "restartCount": 0, "started": phase == "Running",
                                         "state": state}]}
        self.kube.patch("v1", "pods", pod["metadata"]["name"], {"status": status}, subresource="status")

    def _ended(self, pod: dict[str, Any], code: int, started: str) -> None:
        self.exits[pod["metadata"]["name"]] = code
        state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                "startedAt": started, "finishedAt": _now()}}
        self._status(pod, "Succeeded" if code == 0 else "Failed", state)

    def _run(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        what = self.behaviour(pod)
        if what == "never":  # a pod that never finishes: until it is deleted (a deadline)
            while not self._stop.wait(self.poll_s) and not self._gone(name):
                pass
            return
        if what == "hold":
            while not self._released.wait(self.poll_s):
                if self._stop.is_set() or self._gone(name):
                    return
            what = "run"
        started = _now()
        if isinstance(what, int):
            self._ended(pod, what, started)
            return
        container = pod["spec"]["containers"][0]
        command = [self._local(arg) for arg in container["command"]]
        proc = subprocess.Popen(command, env=self._env(pod, container), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._status(pod, "Running", {"running": {"startedAt": started}})
        tail: collections.deque[str] = collections.deque(maxlen=40)
        reader = threading.Thread(target=lambda: tail.extend(proc.stderr or ()), daemon=True)
        reader.start()
        while proc.poll() is None:
            if self._stop.wait(0.2) or self._gone(name):  # a deadline, or the Job deleted: the pod is killed
                proc.kill()
                proc.wait()
                return
        reader.join(timeout=5)
        if proc.returncode != 0:
            print(f"[kubelet stand-in] {name} exited {proc.returncode}:\n{''.join(tail)}", file=sys.stderr)
        self._ended(pod, proc.returncode, started)

    @staticmethod
    def _local(arg: str) -> str:
        """The Spark image's paths, as this checkout has them."""
        if arg == IMAGE_SPARK_SUBMIT:
            return str(Path(sys.executable).parent / "spark-submit") if (Path(sys.executable).parent / "spark-submit").exists() \
                else str(shutil.which("spark-submit"))
        if arg == IMAGE_JOB_PY:
            return str(ROOT / "spark" / "offset_expiry" / "job.py")
        return arg

    def _kubeconfig(self, service_account: str) -> Path:
        """The pod's ServiceAccount's token, as its mounted token would be."""
        if service_account not in self._kubeconfigs:
            path = self.workdir / f"pod-{service_account}.kubeconfig"
            self._kubeconfigs[service_account] = self.plane.service_account_kubeconfig(path, self.kube.namespace,
                                                                                       service_account)
        return self._kubeconfigs[service_account]

    def _env(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OFFSET_EXPIRY_KAFKA_")},
            "KUBECONFIG": str(self._kubeconfig(pod["spec"].get("serviceAccountName") or "default")),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        }
        for var in container.get("env") or ():
            if "value" in var:
                env[var["name"]] = str(var["value"])
            elif ref := (var.get("valueFrom") or {}).get("secretKeyRef"):
                secret = self.kube.get("v1", "secrets", ref["name"])
                env[var["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
        return env
