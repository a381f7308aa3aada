"""The sandbox broker's classic group coordinator, with Kafka 4.x (group-coordinator module) semantics.

- `GroupCoordinator` (coordinator.py): the synchronous state machine: data in, records and data out.
- `create_coordinator(ctx)` (runtime.py): what the broker installs; it writes to the broker's
  `__consumer_offsets` topic and fires timers on the broker clock.

docs/kafka-semantics.md ("Group coordinator (sandbox broker)") lists each rule with its Kafka source.
"""

from .coordinator import GroupCoordinator
from .errors import Error, GroupError
from .runtime import SandboxCoordinator, create_coordinator
from .state import CoordinatorConfig

__all__ = [
    "CoordinatorConfig",
    "Error",
    "GroupCoordinator",
    "GroupError",
    "SandboxCoordinator",
    "create_coordinator",
]
