"""The names ``sdk.convert`` held before it was split by job, re-exported so that code written
against it keeps working: the protobuf message conversions are :mod:`sdk.messages`, the
hand-written wire codec of the decision hot path :mod:`sdk.wire`, and the decision JSON files
:mod:`sdk.decision_file`. New code imports from those."""

from __future__ import annotations

from sdk.decision_file import (
    SDK_DECISION_FORMAT,
    decision_from_json,
    decision_to_json,
)
from sdk.messages import (
    MalformedReplyError,
    ProtocolError,
    action_from_proto,
    action_to_proto,
    deal_summary_from_proto,
    deal_summary_to_proto,
    decision_from_proto,
    decision_to_proto,
    hand_result_from_proto,
    hand_result_to_proto,
    match_info_from_proto,
    match_info_to_proto,
    match_summary_from_proto,
    match_summary_to_proto,
    observation_from_proto,
    observation_to_proto,
    outcome_from_proto,
    outcome_to_proto,
    record_from_proto,
    record_to_proto,
    reply_from_proto,
    reply_to_proto,
    rules_from_proto,
    rules_to_proto,
    table_meld_from_proto,
    table_meld_to_proto,
)
from sdk.wire import (
    decode_decide_request,
    decode_reply,
    encode_decide_request,
    encode_observation,
    encode_reply,
)

__all__ = [
    "SDK_DECISION_FORMAT",
    "MalformedReplyError",
    "ProtocolError",
    "action_from_proto",
    "action_to_proto",
    "deal_summary_from_proto",
    "deal_summary_to_proto",
    "decision_from_json",
    "decision_from_proto",
    "decision_to_json",
    "decision_to_proto",
    "decode_decide_request",
    "decode_reply",
    "encode_decide_request",
    "encode_observation",
    "encode_reply",
    "hand_result_from_proto",
    "hand_result_to_proto",
    "match_info_from_proto",
    "match_info_to_proto",
    "match_summary_from_proto",
    "match_summary_to_proto",
    "observation_from_proto",
    "observation_to_proto",
    "outcome_from_proto",
    "outcome_to_proto",
    "record_from_proto",
    "record_to_proto",
    "reply_from_proto",
    "reply_to_proto",
    "rules_from_proto",
    "rules_to_proto",
    "table_meld_from_proto",
    "table_meld_to_proto",
]
