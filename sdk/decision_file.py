"""Decision files: one decision a bot was asked, for ``tonk replay-decision``.

Two formats, both read by :func:`read_decision`:

* **proto3 JSON of the DecideRequest** (what the dashboard downloads): exactly the message
  the bot received, as ``google.protobuf.json_format.MessageToJson`` writes it (lowerCamelCase
  names, default values left out), so a bot in any language can load it with its own protobuf
  library and feed it to its ``Decide``;
* **the SDK's decision JSON** (``"format": "tonk-sdk-decision/1"``, what ``tonk check
  --dump-faults`` writes, with the fault added): ``match_id``, ``hand_index``,
  ``decision_id``, ``deadline_ms`` and ``Observation.to_json()``, cards and actions in their
  one-line text form. A file of this shape without ``format`` (older downloads), or a bare
  observation, is read as it too.
"""

from __future__ import annotations

from typing import Any, Final

from sdk.errors import TonkError
from sdk.messages import ProtocolError, decision_from_proto, decision_to_proto
from sdk.observation import Observation
from sdk.referee import DecisionRequest

#: The name of the SDK's own decision JSON.
SDK_DECISION_FORMAT: Final = "tonk-sdk-decision/1"


def decision_to_json(request: DecisionRequest) -> dict[str, Any]:
    """The SDK's JSON form of a decision: ids, deadline and ``Observation.to_json()``."""
    return {
        "format": SDK_DECISION_FORMAT,
        "match_id": request.match_id,
        "hand_index": request.hand_index,
        "decision_id": request.decision_id,
        "deadline_ms": request.deadline_ms,
        "observation": request.observation.to_json(),
    }


def decision_from_json(data: Any) -> DecisionRequest:
    """Read :func:`decision_to_json`'s form; a bare observation object is accepted too."""
    if not isinstance(data, dict):
        raise ProtocolError(f"a decision is a JSON object, got {type(data).__name__}")
    obs_data = data.get("observation", data)
    try:
        obs = Observation.from_json(obs_data)
    except TonkError as exc:
        raise ProtocolError(f"observation: {exc}") from None
    hand_index = data.get("hand_index", obs.hand_index)
    match_id = str(data.get("match_id", "replay"))
    return DecisionRequest(
        match_id=match_id,
        hand_index=int(hand_index),
        decision_id=str(data.get("decision_id", f"{match_id}/{hand_index}/0")),
        observation=obs,
        deadline_ms=int(data.get("deadline_ms", 1000)),
    )


def decision_to_proto_dict(request: DecisionRequest) -> dict[str, Any]:
    """The proto3 JSON (as a dict) of the DecideRequest a bot receives for ``request``:
    ``json.dumps`` of it is what ``MessageToJson`` writes."""
    from google.protobuf import json_format

    return dict(json_format.MessageToDict(decision_to_proto(request)))


def decision_to_proto_json(request: DecisionRequest) -> str:
    """The proto3 JSON of the DecideRequest a bot receives for ``request``."""
    from google.protobuf import json_format

    return str(json_format.MessageToJson(decision_to_proto(request), indent=1))


def read_decision(data: Any) -> tuple[DecisionRequest, str]:
    """The decision in ``data`` (parsed JSON) and the name of its format (``"proto3-json"`` or
    ``SDK_DECISION_FORMAT``); :class:`ProtocolError` when it is neither."""
    if not isinstance(data, dict):
        raise ProtocolError(f"a decision is a JSON object, got {type(data).__name__}")
    if data.get("format") not in (None, SDK_DECISION_FORMAT):
        raise ProtocolError(f"unknown decision format {str(data['format'])[:80]!r}")
    if "format" not in data:
        request = _from_proto_json(data)
        if request is not None:
            return request, "proto3-json"
    return decision_from_json(data), SDK_DECISION_FORMAT


def _from_proto_json(data: dict[str, Any]) -> DecisionRequest | None:
    """The request if ``data`` is a DecideRequest in proto3 JSON (strictly: no unknown field),
    else None. The SDK's shape never parses as one: its ``phase`` is ``"start"``/``"play"``,
    not an enum name, and a bare observation has fields a DecideRequest lacks."""
    from google.protobuf import json_format

    from sdk.protocol import bot_pb2 as pb

    message = pb.DecideRequest()
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError:
        return None
    if not message.HasField("observation"):
        return None
    try:
        return decision_from_proto(message)
    except Exception as exc:  # a DecideRequest the engine cannot read: say so, as for the SDK form
        raise ProtocolError(f"DecideRequest: {exc}") from None


__all__ = [
    "SDK_DECISION_FORMAT",
    "decision_from_json",
    "decision_to_json",
    "decision_to_proto_dict",
    "decision_to_proto_json",
    "read_decision",
]
