"""`DeadLetterStore`: the readable DLQ stream of a `NatsJetStreamQueue` (see `_queue.py`)."""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING

import msgspec
import nats.js.errors

from ..._errors import PoisonMessage
from ...queue._delivery import DeadLetter
from ...queue._envelope import Envelope, pack, unpack
from ._wire import POISON_HEADER, key_token

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nats.js import JetStreamContext
    from nats.js.api import RawStreamMsg

    from ...queue._codec import Codec
    from ._wire import Call, Names, Raw

__all__ = ("DeadLetterStore",)

Entry = tuple[int, DeadLetter, Envelope]
"""A DLQ entry: its sequence in the DLQ stream, what `dead_letters` shows, the envelope to replay."""
Request = tuple[str, bytes, "dict[str, str] | None"]
"""A publish request for `Replies.request_all`: subject, payload, headers."""


class DeadLetterStore:
    """Writes DLQ entries (as requests for the caller to send) and reads them back, oldest first."""

    def __init__(
        self,
        js: JetStreamContext,
        names: Names,
        codec: Codec,
        call: Call,
    ) -> None:
        self._js = js
        self._names = names
        self._codec = codec
        self._call = call

    def entry(self, topic: str, raw: Raw, attempt: int, reason: str) -> tuple[str, bytes, dict[str, str]]:
        """The publish request that dead-letters `raw` (deduplicated, should it be sent twice)."""
        now = time.time()
        headers = {"Nats-Msg-Id": f"{raw.info.seq}.{raw.info.delivered}"}
        env = raw.envelope
        if env is None:  # not an envelope at all: keep its bytes
            headers[POISON_HEADER] = "envelope"
            env = Envelope(
                id=f"poison-{raw.info.seq}", topic=topic, body=raw.data, created=now, priority=raw.priority
            )
        fields = {"attempt": attempt, "reason": reason, "failed_at": now}
        return self._names.dlq_subject(topic), pack(msgspec.structs.replace(env, **fields)), headers

    async def read(self, topic: str, limit: int | None) -> list[Entry]:
        """Up to `limit` (all if `None`) entries of `topic`'s DLQ, oldest first."""
        subject = self._names.dlq_subject(topic)
        entries: list[Entry] = []
        start = 1
        while limit is None or len(entries) < limit:
            msg = await self._call("read the DLQ", partial(self._next, subject, start))
            if msg is None or msg.seq is None:
                break
            entries.append(self._letter(topic, msg.seq, msg))
            start = msg.seq + 1
        return entries

    async def _next(self, subject: str, seq: int) -> RawStreamMsg | None:
        try:
            return await self._js.get_msg(self._names.dlq_stream, seq=seq, subject=subject, next=True)
        except nats.js.errors.NotFoundError:
            return None

    def _letter(self, topic: str, seq: int, msg: RawStreamMsg) -> Entry:
        data = msg.data or b""
        try:
            env = unpack(data)
        except PoisonMessage as exc:  # written to the DLQ by something else than mocra
            env = Envelope(id=f"dlq-{seq}", topic=topic, body=data, created=0.0, reason=exc.reason)
        payload: object = env.body
        if not (msg.headers or {}).get(POISON_HEADER):
            try:
                payload = self._codec.decode(env.body)
            except Exception:  # an undecodable payload is shown as its bytes
                payload = env.body
        letter = DeadLetter(
            env.id,
            topic,
            payload,
            env.key,
            env.attempt,
            env.reason or "",
            env.failed_at or 0.0,
            env.priority,
            env.created,
        )
        return seq, letter, env

    def replays(self, topic: str, entries: Sequence[Entry]) -> tuple[list[Request], set[str]]:
        """The publish requests that put `entries` back on `topic` with attempt 1, and the bells to ring.

        The attempts each had used are added to its `prior_attempts` (its fence keeps rising).
        """
        requests: list[Request] = []
        bells: set[str] = set()
        for _, _letter, env in entries:
            if env.key is None:
                subject, bell = self._names.lane_subject(topic, env.priority), f"l{env.priority}"
            else:
                kt = key_token(env.key)
                subject, bell = self._names.key_subject(topic, kt), f"k{kt}"
            prior = env.prior_attempts + env.attempt  # its fence goes on rising (`Fence`)
            fresh = msgspec.structs.replace(env, attempt=1, prior_attempts=prior, reason=None, failed_at=None)
            requests.append((subject, pack(fresh), None))
            bells.add(bell)
        return requests, bells

    async def delete(self, seqs: Sequence[int]) -> None:
        """Remove entries (replayed) from the DLQ stream."""
        for seq in seqs:
            await self._call("delete from the DLQ", partial(self._delete, seq))

    async def _delete(self, seq: int) -> None:
        try:
            await self._js.delete_msg(self._names.dlq_stream, seq)
        except nats.js.errors.NotFoundError:
            pass  # replayed by another process meanwhile
