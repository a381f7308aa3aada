"""Kafka's primitive wire types, read and written with byte positions kept for error messages.

`__consumer_offsets` keys and values use the same primitives as the Kafka protocol: big-endian
integers, int16-length strings in classic versions and unsigned-varint "compact" lengths (length + 1,
0 meaning null) in flexible versions, followed by a tagged-field section per struct.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

# Kafka's generated readers and writers refuse strings longer than this, in classic and compact form
# alike (MessageDataGenerator: "string field ... had invalid length" / "field is too long").
MAX_STRING_BYTES = 0x7FFF


class CodecError(ValueError):
    """Bytes that are not a valid record: says what is wrong and at which byte of which part."""

    def __init__(self, message: str, *, part: str = "", offset: int | None = None) -> None:
        self.reason = message
        self.part = part
        self.offset = offset
        where = part
        if offset is not None:
            where = f"{part} byte {offset}" if part else f"byte {offset}"
        super().__init__(f"{where}: {message}" if where else message)


class Reader:
    """A cursor over one key or value. `part` ("key", "value", "subscription") prefixes errors.

    `end` bounds the readable bytes (a tagged field's content is read in place, so error offsets stay
    counted from the start of the key or value)."""

    __slots__ = ("buf", "end", "part", "pos")

    def __init__(self, buf: bytes, part: str, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.part = part
        self.pos = pos
        self.end = len(buf) if end is None else end

    def error(self, message: str, offset: int | None = None) -> CodecError:
        return CodecError(message, part=self.part, offset=self.pos if offset is None else offset)

    def _take(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0:
            raise self.error(f"negative length {n} for {what}")
        if start + n > self.end:
            raise self.error(f"truncated: {what} needs {n} bytes, only {self.end - start} left", start)
        self.pos = start + n
        return start

    # The fixed-size readers check bounds inline: they run for almost every field of every record.
    def int8(self, what: str) -> int:
        pos = self.pos
        if pos + 1 > self.end:
            self._take(1, what)
        self.pos = pos + 1
        return int(_I8.unpack_from(self.buf, pos)[0])

    def int16(self, what: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            self._take(2, what)
        self.pos = pos + 2
        return int(_I16.unpack_from(self.buf, pos)[0])

    def int32(self, what: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self._take(4, what)
        self.pos = pos + 4
        return int(_I32.unpack_from(self.buf, pos)[0])

    def int64(self, what: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            self._take(8, what)
        self.pos = pos + 8
        return int(_I64.unpack_from(self.buf, pos)[0])

    def boolean(self, what: str) -> bool:
        return self.buf[self._take(1, what)] != 0

    # The project's only hand-written varint (the codec is a leaf: it imports no Kafka client). The rest
    # uses kafka-python's; its unsigned varint (UnsignedVarInt32) reads a file object, without the bounds
    # (`end`) and byte positions these errors report.
    def uvarint(self, what: str) -> int:
        start = self.pos
        result = 0
        shift = 0
        while True:
            if self.pos >= self.end:
                raise self.error(f"truncated: unsigned varint for {what}", start)
            byte = self.buf[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise self.error(f"unsigned varint for {what} is longer than 5 bytes", start)

    def string(self, what: str, flexible: bool, nullable: bool) -> str | None:
        start = self.pos
        n = self.uvarint(what) - 1 if flexible else self.int16(what)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise self.error(f"{what} is null or has negative length {n}", start)
        if n > MAX_STRING_BYTES:
            raise self.error(f"{what} has length {n}, longer than Kafka's limit of {MAX_STRING_BYTES}", start)
        at = self._take(n, what)
        try:
            return self.buf[at : at + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{what} is not valid UTF-8", at + exc.start) from None

    def bytes_(self, what: str, flexible: bool, nullable: bool) -> bytes | None:
        start = self.pos
        n = self.uvarint(what) - 1 if flexible else self.int32(what)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise self.error(f"{what} is null or has negative length {n}", start)
        at = self._take(n, what)
        return bytes(self.buf[at : at + n])

    def uuid(self, what: str) -> str:
        at = self._take(16, what)
        return uuid_to_str(self.buf[at : at + 16])

    def _count(self, what: str, flexible: bool, nullable: bool) -> int | None:
        """An array's element count; None for a null array."""
        start = self.pos
        n = self.uvarint(what) - 1 if flexible else self.int32(what)
        if n < 0:
            if n == -1 and nullable:
                return None
            raise self.error(f"{what} is null or has negative length {n}", start)
        # Every element takes at least one byte: a count larger than what is left is corrupt, and
        # checking it here keeps garbage from allocating huge lists.
        if n > self.end - self.pos:
            raise self.error(
                f"truncated: {what} claims {n} elements, only {self.end - self.pos} bytes left", start
            )
        return n

    def array(self, what: str, flexible: bool, nullable: bool, item: Callable[[Reader], T]) -> list[T] | None:
        n = self._count(what, flexible, nullable)
        return None if n is None else [item(self) for _ in range(n)]

    def int32_array(self, what: str, flexible: bool, nullable: bool) -> list[int] | None:
        """An array of int32 (partition lists) in one unpack; element by element only to report where
        a truncated array ends."""
        n = self._count(what, flexible, nullable)
        if n is None:
            return None
        pos = self.pos
        if pos + 4 * n > self.end:
            return [self.int32(what) for _ in range(n)]
        self.pos = pos + 4 * n
        return list(struct.unpack_from(f">{n}i", self.buf, pos))

    def tagged_fields(self, what: str) -> dict[int, tuple[int, int]]:
        """Tag -> (start, end) of its content. Kafka's readers take tags in any order (its writers sort
        them), so do we; a repeated tag is refused because one of the two values would be lost."""
        count = self.uvarint(f"{what} tagged-field count")
        fields: dict[int, tuple[int, int]] = {}
        for _ in range(count):
            start = self.pos
            tag = self.uvarint(f"{what} tag")
            if tag in fields:
                raise self.error(f"{what} tag {tag} appears twice", start)
            size = self.uvarint(f"{what} tag {tag} size")
            at = self._take(size, f"{what} tag {tag}")
            fields[tag] = (at, at + size)
        return fields

    def expect_end(self, what: str) -> None:
        if self.pos != self.end:
            raise self.error(f"{what}: {self.end - self.pos} unexpected trailing bytes")

    def remaining(self) -> bytes:
        rest = bytes(self.buf[self.pos : self.end])
        self.pos = self.end
        return rest


class Writer:
    """Appends Kafka primitives to a bytearray."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.out)

    def int8(self, v: int) -> None:
        self.out += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.out += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.out += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.out += _I64.pack(v)

    def boolean(self, v: bool) -> None:
        self.out.append(1 if v else 0)

    def uvarint(self, v: int) -> None:  # see Reader.uvarint for why the codec writes its own
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        while v >= 0x80:
            self.out.append((v & 0x7F) | 0x80)
            v >>= 7
        self.out.append(v)

    def string(self, v: str | None, flexible: bool) -> None:
        if v is None:
            self.uvarint(0) if flexible else self.int16(-1)
            return
        data = v.encode("utf-8")
        if len(data) > MAX_STRING_BYTES:
            raise ValueError(
                f"string of {len(data)} bytes is longer than Kafka's limit of {MAX_STRING_BYTES}"
            )
        if flexible:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        self.out += data

    def bytes_(self, v: bytes | None, flexible: bool) -> None:
        if v is None:
            self.uvarint(0) if flexible else self.int32(-1)
            return
        self.uvarint(len(v) + 1) if flexible else self.int32(len(v))
        self.out += v

    def uuid(self, v: str) -> None:
        self.out += uuid_from_str(v)

    def array_length(self, n: int | None, flexible: bool) -> None:
        if n is None:
            self.uvarint(0) if flexible else self.int32(-1)
        elif flexible:
            self.uvarint(n + 1)
        else:
            self.int32(n)

    def tagged_fields(self, fields: dict[int, bytes]) -> None:
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(fields[tag]))
            self.out += fields[tag]


def uuid_to_str(raw: bytes) -> str:
    """Kafka prints a Uuid as URL-safe base64 without padding (`org.apache.kafka.common.Uuid.toString`)."""
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a Kafka Uuid (URL-safe base64 of 16 bytes)") from None
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid (URL-safe base64 of 16 bytes)")
    return raw
