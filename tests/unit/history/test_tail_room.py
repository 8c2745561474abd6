"""The room a process keeps for each org's index tail (docs/adr/0153): a count of the tail
is paid once per TAIL_WINDOWS windows written there at most, and a full tail is counted
again only after TAIL_RECOUNT_SECONDS."""

from __future__ import annotations

from memory.infrastructure.history.embeddings import (
    TAIL_RECOUNT_SECONDS,
    TAIL_WINDOWS,
    _TailRoom,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_org_is_counted_first_then_uses_its_room_until_it_is_gone() -> None:
    clock = Clock()
    room = _TailRoom(10, clock)
    assert room.to_count("m", {"acme": 16}) == ["acme"]
    assert not room.take("m", "acme", 16), "nothing counted: no room"
    room.counted("m", "acme", TAIL_WINDOWS - 20)
    assert room.to_count("m", {"acme": 16}) == []
    assert room.take("m", "acme", 16)
    assert not room.take("m", "acme", 16), "4 left"
    assert room.to_count("m", {"acme": 16}) == [], "counted just now"
    clock.now += TAIL_RECOUNT_SECONDS
    assert room.to_count("m", {"acme": 16}) == ["acme"]
    room.counted("m", "acme", 0)  # the merger emptied it
    assert room.take("m", "acme", 16)
    assert room.to_count("m", {"acme": 4, "globex": 1}) == ["globex"]
    assert not room.take("m", "globex", 1)
    assert room.to_count("other-model", {"acme": 1}) == ["acme"], "per model"


def test_the_room_forgets_the_oldest_orgs_beyond_its_size() -> None:
    room = _TailRoom(2, Clock())
    for org in ("a", "b", "c"):
        room.counted("m", org, 0)
    assert room.to_count("m", {"a": 1, "b": 1, "c": 1}) == ["a"]
