from __future__ import annotations

import msgspec
import msgspec.inspect as mi
import pytest

from paddock.contract import (
    EVENT_TYPES,
    ContentDelta,
    ValidationError,
    decode_event,
    decode_events,
    encode_event,
)

ENVELOPE = {"driver": "local", "instance_id": "local-a", "thread_id": "t1"}


def _sample(t: mi.Type, depth: int = 0):
    """A value of type ``t`` that is not the field's default, so round trips test every field."""
    if isinstance(t, mi.UnionType):
        non_none = [x for x in t.types if not isinstance(x, mi.NoneType)]
        return _sample(non_none[0], depth)
    if isinstance(t, mi.LiteralType):
        return t.values[-1]
    if isinstance(t, mi.StrType):
        return "s"
    if isinstance(t, mi.BoolType):
        return True
    if isinstance(t, mi.IntType):
        return 7
    if isinstance(t, mi.FloatType):
        return 1.5
    if isinstance(t, (mi.DictType, mi.AnyType)):
        return {"k": [1, "v"]}
    if isinstance(t, (mi.VarTupleType, mi.ListType)):
        return [_sample(t.item_type, depth + 1)]
    if isinstance(t, mi.StructType):
        sample = {f.encode_name: _sample(f.type, depth + 1) for f in t.fields}
        if t.tag_field is not None:  # a member of a tagged union (RequestOpened.subject)
            sample[t.tag_field] = t.tag
        return sample
    raise AssertionError(f"no sample for {t}")


def _full_event_json(cls) -> dict:
    info = mi.type_info(cls)
    data = {f.encode_name: _sample(f.type) for f in info.fields}
    data.update(ENVELOPE)
    data["type"] = info.tag
    return data


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
def test_every_event_round_trips(type_name):
    cls = EVENT_TYPES[type_name]
    event = msgspec.convert(_full_event_json(cls), cls)
    assert event.type == type_name if hasattr(event, "type") else True
    encoded = encode_event(event)
    assert decode_event(encoded) == event
    assert decode_event(encoded.decode()) == event
    assert msgspec.json.decode(encoded)["type"] == type_name


def test_the_union_has_every_family_of_the_architecture():
    families = {name.split(".")[0] for name in EVENT_TYPES}
    assert families >= {
        "session", "thread", "turn", "item", "content", "request", "user-input", "task", "hook",
        "tool", "auth", "account", "mcp", "model", "config", "deprecation", "files", "runtime", "budget",
    }
    assert len(EVENT_TYPES) == 46


def test_events_are_frozen():
    e = ContentDelta(**ENVELOPE, stream="assistant_text", delta="x")
    with pytest.raises(AttributeError):
        e.delta = "y"  # type: ignore[misc]


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
def test_malformed_events_raise_validation_error_naming_the_problem(type_name):
    good = _full_event_json(EVENT_TYPES[type_name])
    with pytest.raises(ValidationError, match="truncated|malformed|JSON"):
        decode_event(msgspec.json.encode(good)[:-1])
    with pytest.raises(ValidationError, match=r"Invalid value 'no\.such\.type' - at `\$\.type`"):
        decode_event(msgspec.json.encode({**good, "type": "no.such.type"}))
    with pytest.raises(ValidationError, match=r"missing required field `thread_id`"):
        decode_event(msgspec.json.encode({k: v for k, v in good.items() if k != "thread_id"}))
    with pytest.raises(ValidationError, match=r"Expected `int`, got `str` - at `\$\.seq`"):
        decode_event(msgspec.json.encode({**good, "seq": "1"}))
    with pytest.raises(ValidationError, match=r"unknown field `surprise`"):
        decode_event(msgspec.json.encode({**good, "surprise": 1}))


def test_error_names_the_operation_and_issue():
    with pytest.raises(ValidationError) as info:
        decode_event(b"{")
    assert info.value.operation == "decode_event"
    assert str(info.value).startswith("Invalid input to decode_event:")


def test_decode_events_decodes_a_batch():
    batch = [ContentDelta(**ENVELOPE, stream="assistant_text", delta=str(i), seq=i + 1) for i in range(3)]
    assert decode_events(msgspec.json.encode(batch)) == batch
    with pytest.raises(ValidationError):
        decode_events(b'[{"type":"content.delta"}]')
