"""A stand-in for kubeflow spark-operator, for tests: it watches SparkApplications on the emulated API and
runs each one's main application file locally with its arguments, its driver environment (secretKeyRefs
resolved from the emulated Secrets) and its sparkConf, in local mode; and it writes the status the way
spark-operator does: status.applicationState.state SUBMITTED -> RUNNING -> COMPLETED or FAILED (with
applicationState.errorMessage), plus driverInfo, submissionAttempts and terminationTime.

Test controls:
- `fail_next(n, message)`: the next n applications fail the way a driver pod that died does, without
  running anything (spark-operator: "driver container failed with ExitCode: 137, Reason: OOMKilled");
- `before_complete`: called with the application after its job exited 0 and before COMPLETED is written
  (e.g. to commit an offset "between the scan and the deletion").
"""

from __future__ import annotations

import base64
import collections
import datetime
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from operator_harness import NAMESPACE, ROOT, Kube, KubeApiError

API = "sparkoperator.k8s.io/v1beta2"
PLURAL = "sparkapplications"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SparkOperatorStandIn:
    def __init__(self, kube: Kube, kubeconfig: Path, namespace: str = NAMESPACE, poll_s: float = 0.2) -> None:
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.poll_s = poll_s
        self.before_complete: Callable[[dict[str, Any]], None] | None = None
        self.seen: list[str] = []  # application names, in order
        self.states: dict[str, list[str]] = collections.defaultdict(list)  # name -> states written
        self._fail: list[str] = []
        self._handled: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-operator-standin", daemon=True)
        self._errors: list[BaseException] = []

    def start(self) -> SparkOperatorStandIn:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        if self._errors:
            raise AssertionError(f"the spark-operator stand-in failed: {self._errors[0]!r}") from self._errors[0]

    def fail_next(self, count: int = 1, message: str = "driver container failed with ExitCode: 137, Reason: OOMKilled") -> None:
        self._fail.extend([message] * count)

    # -- the controller

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                apps = self.kube.list(API, PLURAL, self.namespace)
            except KubeApiError as exc:
                self._errors.append(exc)
                return
            for app in apps:
                uid = app["metadata"]["uid"]
                if uid in self._handled:
                    continue
                self._handled.add(uid)
                self.seen.append(app["metadata"]["name"])
                threading.Thread(target=self._guarded, args=(app,), daemon=True).start()
            self._stop.wait(self.poll_s)

    def _guarded(self, app: dict[str, Any]) -> None:
        try:
            self._run(app)
        except KubeApiError as exc:
            if exc.status != 404:  # deleted while it ran: nothing to report to
                self._errors.append(exc)
        except BaseException as exc:
            self._errors.append(exc)

    def _status(self, app: dict[str, Any], state: str, **extra: Any) -> None:
        name = app["metadata"]["name"]
        # driverInfo is in every status spark-operator writes (its Go field has no omitempty, so kubeflow's
        # schema requires it); a merge patch of {} keeps what an earlier one set.
        status: dict[str, Any] = {"applicationState": {"state": state}, "driverInfo": {}, **extra}
        if state in ("COMPLETED", "FAILED"):
            status["terminationTime"] = _now()
        if "errorMessage" in extra:
            status["applicationState"]["errorMessage"] = status.pop("errorMessage")
        self.kube.patch(API, PLURAL, name, {"status": status}, self.namespace, subresource="status")
        self.states[name].append(state)

    def _run(self, app: dict[str, Any]) -> None:
        name = app["metadata"]["name"]
        self._status(app, "SUBMITTED", submissionAttempts=1, lastSubmissionAttemptTime=_now(),
                     sparkApplicationId=f"spark-{app['metadata']['uid'][:12]}")
        if self._fail:
            self._status(app, "FAILED", errorMessage=self._fail.pop(0))
            return
        spec = app["spec"]
        command = [sys.executable, str(self._main_file(spec["mainApplicationFile"])), *spec.get("arguments", [])]
        proc = subprocess.Popen(command, env=self._env(spec), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        self._status(app, "RUNNING", driverInfo={"podName": f"{name}-driver"}, executionAttempts=1)
        tail: collections.deque[str] = collections.deque(maxlen=20)
        reader = threading.Thread(target=lambda: tail.extend(proc.stderr or ()), daemon=True)
        reader.start()
        while proc.poll() is None:
            if self._stop.wait(0.2) or self.kube.find(API, PLURAL, name, self.namespace) is None:
                proc.kill()
                proc.wait()
                return
        reader.join(timeout=5)
        if proc.returncode != 0:
            errors = [line.strip() for line in tail if "error:" in line]
            reason = errors[-1] if errors else f"driver container failed with ExitCode: {proc.returncode}"
            self._status(app, "FAILED", errorMessage=reason)
            return
        if self.before_complete is not None:
            self.before_complete(app)
        self._status(app, "COMPLETED")

    @staticmethod
    def _main_file(url: str) -> Path:
        """The image's job.py is this checkout's: local:///.../spark/offset_expiry/job.py."""
        path = url.removeprefix("local://")
        assert path.endswith("spark/offset_expiry/job.py"), url
        return ROOT / "spark" / "offset_expiry" / "job.py"

    def _env(self, spec: dict[str, Any]) -> dict[str, str]:
        conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", **(spec.get("sparkConf") or {})}
        submit = ["--master", "local[2]"]
        for key, value in conf.items():
            submit += ["--conf", f"{key}={value}"]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OFFSET_EXPIRY_KAFKA_")},
            "KUBECONFIG": str(self.kubeconfig),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_SUBMIT_ARGS": " ".join([*submit, "pyspark-shell"]),
        }
        for var in (spec.get("driver") or {}).get("env") or ():
            if "value" in var:
                env[var["name"]] = str(var["value"])
            elif ref := (var.get("valueFrom") or {}).get("secretKeyRef"):
                secret = self.kube.get("v1", "secrets", ref["name"], self.namespace)
                env[var["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
        return env

