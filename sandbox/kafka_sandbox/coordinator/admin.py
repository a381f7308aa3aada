"""ListGroups, DescribeGroups and DeleteGroups, after apache/kafka (4.x) GroupMetadataManager.listGroups /
describeGroups, ClassicGroupMember.describe / describeNoMetadata and GroupCoordinatorShard.deleteGroups."""

from __future__ import annotations

from collections.abc import Iterable

import kafka.errors as Errors

from .classic import ClassicGroup, GroupState
from .errors import GroupError
from .messages import DeletedGroup, DescribedGroup, DescribedMember, ListedGroup
from .modern import ConsumerGroup
from .offset_manager import OffsetManager, group_tombstones
from .state import CoordinatorState, Group

# Group.GroupType names; anything else parses to "unknown" and matches no group.
GROUP_TYPES = ("consumer", "classic", "share", "streams")


def group_state(group: Group) -> str:
    return group.state.value if isinstance(group, ClassicGroup) else group.state


def group_type(group: Group) -> str:
    return "classic" if isinstance(group, ClassicGroup) else group.group_type


def listed(group: Group) -> ListedGroup:
    protocol_type = (group.protocol_type or "") if isinstance(group, ClassicGroup) else group.group_type
    return ListedGroup(group.group_id, protocol_type, group_state(group), group_type(group))


class GroupAdmin:
    def __init__(self, state: CoordinatorState, offsets: OffsetManager) -> None:
        self.s = state
        self.offsets = offsets

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """Filters are case-insensitive; an empty filter matches everything, an unknown value nothing."""
        states = {s.strip().lower() for s in states_filter}
        types = {t.lower() if t.lower() in GROUP_TYPES else "unknown" for t in types_filter}
        out = []
        for group in self.s.groups.values():
            if states and group_state(group).lower() not in states:
                continue
            if types and group_type(group) not in types:
                continue
            out.append(listed(group))
        return out

    def describe_groups(self, group_ids: Iterable[str], api_version: int) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            group = self.s.groups.get(group_id)
            if isinstance(group, ClassicGroup):
                out.append(describe_classic(group))
                continue
            # Unknown, or not a classic group (KIP-848 groups answer ConsumerGroupDescribe instead).
            message = (
                f"Group {group_id} not found."
                if group is None
                else f"Group {group_id} is not a classic group."
            )
            if api_version >= 6:  # KIP-1043
                out.append(
                    DescribedGroup(group_id, "Dead", error=Errors.GroupIdNotFoundError, error_message=message)
                )
            else:
                out.append(DescribedGroup(group_id, "Dead"))
        return out

    def describe_modern_groups(self, group_ids: Iterable[str], kind: str) -> list[tuple[str, ConsumerGroup | None]]:
        """ConsumerGroupDescribe (`kind` "consumer") and StreamsGroupDescribe ("streams"):
        GroupMetadataManager.consumerGroupDescribe / streamsGroupDescribe describe each group of that type
        (ConsumerGroup.asDescribedGroup, StreamsGroup.asDescribedGroup) and answer GROUP_ID_NOT_FOUND for a
        group that does not exist or is of another type (`consumerGroup(groupId)` throws
        GroupIdNotFoundException "Group %s is not a consumer group"). None stands for that answer."""
        out: list[tuple[str, ConsumerGroup | None]] = []
        for group_id in group_ids:
            group = self.s.groups.get(group_id)
            found = group if isinstance(group, ConsumerGroup) and group.group_type == kind else None
            out.append((group_id, found))
        return out

    def delete_groups(self, group_ids: Iterable[str]) -> list[DeletedGroup]:
        results = []
        seen: set[str] = set()
        with self.s.batch():
            for group_id in group_ids:
                if group_id in seen:  # KafkaApis.handleDeleteGroupsRequest de-duplicates
                    continue
                seen.add(group_id)
                group = self.s.groups.get(group_id)
                try:
                    if group is None:
                        raise GroupError(Errors.GroupIdNotFoundError, f"Group {group_id} not found.")
                    group.validate_delete_group()
                except GroupError as exc:
                    results.append(DeletedGroup(group_id, exc.error))
                    continue
                self.s.write(group_id, self.offsets.delete_all_offsets(group_id) + group_tombstones(group))
                self.offsets.forget_group(group_id)
                results.append(DeletedGroup(group_id))
        return results


def describe_classic(group: ClassicGroup) -> DescribedGroup:
    """Stable groups show each member's metadata for the selected protocol and its assignment; other
    states list members without metadata (the new coordinator still fills the assignment)."""
    if group.is_in(GroupState.STABLE):
        protocol = group.protocol_name or ""
        members = tuple(
            DescribedMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(protocol),
                m.assignment,
            )
            for m in group.members.values()
        )
        return DescribedGroup(group.group_id, group.state.value, group.protocol_type or "", protocol, members)
    members = tuple(
        DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", m.assignment)
        for m in group.members.values()
    )
    return DescribedGroup(group.group_id, group.state.value, group.protocol_type or "", "", members)
