"""Which `__consumer_offsets` partition holds a group: `Utils.abs(groupId.hashCode()) % partitions`.

Source: apache/kafka GroupCoordinatorService.partitionFor / Utils.abs; Java's String.hashCode sums
UTF-16 code units with 32-bit overflow, and Utils.abs maps Integer.MIN_VALUE to 0.
"""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group: str, partitions: int) -> int:
    if partitions <= 0:
        raise ValueError(f"partition count must be positive, got {partitions}")
    h = java_string_hash(group)
    return (0 if h == -(2**31) else abs(h)) % partitions
