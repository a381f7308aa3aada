"""ConsumerGroupDescribe (API 69, KIP-848) and StreamsGroupDescribe (API 89, KIP-1071) for the KIP-848 and
streams groups the sandbox knows (seeded from records: coordinator/modern.py).

As Kafka's GroupCoordinatorService.consumerGroupDescribe / streamsGroupDescribe answer them (apache/kafka
group-coordinator, 4.0): each group is described by its shard (GroupMetadataManager.consumerGroupDescribe,
ConsumerGroup.asDescribedGroup: group id, state, group and assignment epochs, the preferred assignor, and
each member with its client id and host, subscribed topic names and regular expression, epoch and
assignments); a group that does not exist or is of another type gets GROUP_ID_NOT_FOUND. The sandbox keeps
no assignments of seeded groups (empty here) and names the assignor "uniform" (Kafka's default). Streams
groups: the topology's source and repartition-source topics as one sub-topology, and each member by id.
The message classes are the ones the operator uses (kafka_offsets_model.kafka_messages).
"""

from __future__ import annotations

from typing import Any

import kafka.errors as Errors

from kafka_offsets_model.kafka_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)

from .context import BrokerContext
from .coordinator.modern import StreamsGroup
from .registry import api_handler

DEFAULT_ASSIGNOR = "uniform"  # GroupCoordinatorConfig.CONSUMER_GROUP_ASSIGNORS_DEFAULT's first
UNSET_OPERATIONS = -2147483648  # AuthorizedOperations not asked (Integer.MIN_VALUE)


@api_handler(ConsumerGroupDescribeRequest, 0, 0)
async def handle_consumer_group_describe(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    group_class = ConsumerGroupDescribeResponse.DescribedGroup
    member_class = group_class.Member
    assignment_class = member_class.Assignment

    def empty() -> Any:
        return assignment_class(topic_partitions=[])

    groups = []
    for group_id, group in ctx.coordinator.core.describe_modern_groups(list(request.group_ids), "consumer"):
        if group is None:
            groups.append(group_class(error_code=Errors.GroupIdNotFoundError.errno, error_message=None,
                                      group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                                      assignor_name="", members=[], authorized_operations=UNSET_OPERATIONS))
            continue
        members = [member_class(member_id=m.member_id, instance_id=m.instance_id, rack_id=None,
                                member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                                subscribed_topic_names=list(m.subscribed_topic_names),
                                subscribed_topic_regex=m.subscribed_topic_regex, assignment=empty(),
                                target_assignment=empty())
                   for m in group.members.values()]
        groups.append(group_class(error_code=0, error_message=None, group_id=group_id, group_state=group.state,
                                  group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                  assignor_name=DEFAULT_ASSIGNOR, members=members,
                                  authorized_operations=UNSET_OPERATIONS))
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=groups)


@api_handler(StreamsGroupDescribeRequest, 0, 0)
async def handle_streams_group_describe(ctx: BrokerContext, request: Any, api_version: int) -> Any:
    group_class = StreamsGroupDescribeResponse.DescribedGroup
    member_class = group_class.Member
    topology_class = group_class.Topology
    assignment_class = member_class.Assignment

    def empty() -> Any:
        return assignment_class(active_tasks=[], standby_tasks=[], warmup_tasks=[])

    groups = []
    for group_id, group in ctx.coordinator.core.describe_modern_groups(list(request.group_ids), "streams"):
        if not isinstance(group, StreamsGroup):
            groups.append(group_class(error_code=Errors.GroupIdNotFoundError.errno, error_message=None,
                                      group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0,
                                      topology=None, members=[], authorized_operations=UNSET_OPERATIONS))
            continue
        topology = None if group.source_topics is None else topology_class(epoch=0, subtopologies=[
            topology_class.Subtopology(subtopology_id="0", source_topics=sorted(group.source_topics),
                                       repartition_sink_topics=[], state_changelog_topics=[],
                                       repartition_source_topics=[])])
        members = [member_class(member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
                                rack_id=None, client_id=m.client_id, client_host=m.client_host, topology_epoch=0,
                                process_id="", user_endpoint=None, client_tags=[], task_offsets=[],
                                task_end_offsets=[], assignment=empty(), target_assignment=empty(),
                                is_classic=False)
                   for m in group.members.values()]
        groups.append(group_class(error_code=0, error_message=None, group_id=group_id, group_state=group.state,
                                  group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                  topology=topology, members=members, authorized_operations=UNSET_OPERATIONS))
    return StreamsGroupDescribeResponse(throttle_time_ms=0, groups=groups)
