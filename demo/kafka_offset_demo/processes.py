"""Server processes that die with whoever started them. Shared by the real control plane (control_plane.py)
and the tests' Apache Kafka broker (tests/support/real_kafka.py): both start long-lived servers in their own
session, which a SIGKILLed parent (pytest killed by CI's timeout, a demo killed with `kill -9`) would otherwise
leave running, holding ports and memory, because the parent's `stop()` never ran.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def dies_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` for a server process that must not outlive whoever started it: on Linux the child asks
    the kernel for SIGKILL when its parent dies (prctl(PR_SET_PDEATHSIG)), so a SIGKILLed pytest or demo
    leaves no etcd, kube-apiserver or Kafka broker holding ports and memory (its own `stop()` never ran).

    The signal fires when the *thread* that forked exits, not the process: only a process started from the
    main thread gets it (None elsewhere, and off Linux: the child then lives until `stop()`, as before). A
    parent that died between fork and prctl is caught by comparing the parent's pid afterwards."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before fork: the child only calls it
    parent = os.getpid()

    def tie() -> None:
        if prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(1)  # no tie, or the parent is gone already: the server must not start orphaned

    return tie
