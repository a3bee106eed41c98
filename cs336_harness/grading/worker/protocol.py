"""The wire format between the judge and the worker: safetensors frames (`encode`, `decode`),
written and read within bounds (docs/architecture.md, "The protocol's frames" and "The wire:
safetensors frames")."""

from __future__ import annotations

import json
import os
from typing import Any

import torch
from safetensors.torch import load, save

from cs336_harness.grading.sandbox.timekeeping import Deadline

HEADER = 8
TENSOR_KEY = "__tensor__"
# Dtypes a message may carry: the ones the adapters take and return.
DTYPES = frozenset(
    {
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
    }
)
# The types JSON carries as they are. A list of them alone is taken whole, its types read in
# C: walked in Python one by one, a tokenizer's ids, some 150,000 in a submission's grading,
# cost the worker and the judge 0.15 s, and 0.05 s taken whole.
SCALARS = frozenset({bool, int, float, type(None)})
# What one string in a message may hold (an exception's message, say).
TEXT_CHARS = 2000
# A frame's safetensors header (tensor table and message) is JSON that the judge must parse
# into Python objects, which cost up to ~50 times their text: a 60 MB list of zeros fits
# under the reply limit and costs 820 MiB to decode. In a correct submission's grading the
# largest header is 131 KB (a reply of the BPE probe) and the most tensors in one frame 93;
# 1 MiB and 1,024 bound one decode at a few tens of MiB, and a frame past them is refused
# before its header is parsed.
HEADER_BYTES = 1 << 20
MAX_TENSORS = 1024


class ProtocolError(Exception):
    """A frame that is malformed, too large, or not what the protocol allows."""


class Unsendable(TypeError):
    """A value with no wire form (a module, a generator, a tensor subclass's extras...)."""


def _pack(value: Any, tensors: dict[str, torch.Tensor], storages: set[int]) -> Any:
    """`value` with each tensor put in `tensors` and replaced by a reference to it;
    `storages`: where the tensors packed so far keep their data."""
    if isinstance(value, torch.Tensor):
        name = f"t{len(tensors)}"
        # A plain, contiguous CPU tensor, its conjugate and negative bits resolved. Copied only
        # where it shares storage with one already packed (safetensors refuses those): a copy
        # of each would cost a reply's size in the worker, whose memory limit binds it.
        plain = value.detach().as_subclass(torch.Tensor).cpu().contiguous()
        plain = plain.resolve_conj().resolve_neg()
        if plain.untyped_storage().data_ptr() in storages:
            plain = plain.clone()
        storages.add(plain.untyped_storage().data_ptr())
        tensors[name] = plain
        return {TENSOR_KEY: name}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        if set(map(type, value)) <= SCALARS:
            return value  # json.dumps writes a tuple as a list
        return [_pack(v, tensors, storages) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        if TENSOR_KEY in value:
            raise Unsendable(f"a dict with the reserved key {TENSOR_KEY!r}")
        return {k: _pack(v, tensors, storages) for k, v in value.items()}
    raise Unsendable(type(value).__name__)


def encode(message: dict[str, Any]) -> bytes:
    """One frame holding `message`; raises Unsendable for a value with no wire form."""
    tensors: dict[str, torch.Tensor] = {}
    document = json.dumps(_pack(message, tensors, set()))
    body = save(tensors, metadata={"message": document})
    return len(body).to_bytes(HEADER, "little") + body


def _unpack(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, list):
        if set(map(type, value)) <= SCALARS:
            return value
        return [_unpack(v, tensors) for v in value]
    if isinstance(value, dict):
        if set(value) == {TENSOR_KEY}:
            try:
                return tensors.pop(value[TENSOR_KEY])  # each tensor is used once
            except (KeyError, TypeError):
                raise ProtocolError(f"reference to a missing tensor {value!r}") from None
        return {str(k): _unpack(v, tensors) for k, v in value.items()}
    if isinstance(value, str):
        return value[:TEXT_CHARS]
    return value


def _check_header(body: bytes) -> None:
    """Refuse a frame whose header is too large to parse, or declares more tensors or more
    bytes than the body holds, before anything is decoded."""
    size = int.from_bytes(body[:HEADER], "little")
    if size > HEADER_BYTES:
        raise ProtocolError(f"a header of {size} bytes, over the limit of {HEADER_BYTES}")
    if HEADER + size > len(body):
        raise ProtocolError("a header longer than the frame")
    # Counted on the raw text: every tensor entry names its "data_offsets" once.
    tensors = body[HEADER : HEADER + size].count(b'"data_offsets"')
    if tensors > MAX_TENSORS:
        raise ProtocolError(f"{tensors} tensors, over the limit of {MAX_TENSORS}")


def decode(body: bytes) -> dict[str, Any]:
    """The message in one frame's body. Checks everything a hostile sender could get wrong."""
    _check_header(body)
    try:
        # safetensors checks every tensor's dtype, shape and offsets against the bytes that
        # follow, so the tensors it builds never hold more than the (bounded) frame.
        tensors = load(body)
        size = int.from_bytes(body[:HEADER], "little")
        metadata = json.loads(body[HEADER : HEADER + size]).get("__metadata__") or {}
        message = json.loads(metadata["message"])
    except Exception as error:  # safetensors raises its own error types, json ValueError
        raise ProtocolError(f"not a well-formed message ({type(error).__name__})") from None
    bad = sorted({str(t.dtype) for t in tensors.values() if t.dtype not in DTYPES})
    if bad:
        raise ProtocolError(f"tensors of a dtype the protocol does not carry: {', '.join(bad)}")
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return _unpack(message, tensors)


class Closed(Exception):
    """The other end closed the pipe (the worker exited or was killed)."""


def _deadline(deadline: float | Deadline | None) -> Deadline | None:
    return Deadline(deadline) if isinstance(deadline, float | int) else deadline


def write_all(fd: int, frame: bytes, deadline: float | Deadline | None = None) -> None:
    """Write `frame` whole; with a `deadline`, `fd` must be non-blocking and a reader that
    stops reading makes this raise Timeout rather than block forever."""
    data = memoryview(frame)
    clock = _deadline(deadline)
    while data:
        if clock is not None:
            clock.wait(fd, write=True)
        try:
            data = data[os.write(fd, data) :]
        except BlockingIOError:
            continue


def write_frame(fd: int, message: dict[str, Any], deadline: float | Deadline | None = None) -> None:
    write_all(fd, encode(message), deadline)


def _read_exactly(fd: int, size: int, deadline: Deadline | None) -> bytes:
    chunks, left = [], size
    while left:
        if deadline is not None:
            deadline.wait(fd)
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise Closed
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(
    fd: int, deadline: float | Deadline | None = None, max_bytes: int | None = None
) -> dict:
    """The next message on `fd`, by `deadline` (time.monotonic(), or a `Deadline`); frames
    past `max_bytes` are refused before their body is read."""
    clock = _deadline(deadline)
    size = int.from_bytes(_read_exactly(fd, HEADER, clock), "little")
    if max_bytes is not None and size > max_bytes:
        raise ProtocolError(f"a reply of {size} bytes, over the limit of {max_bytes}")
    if size >= HEADER:  # the safetensors header's length comes first: refuse it unread
        header = int.from_bytes(_read_exactly(fd, HEADER, clock), "little")
        if header > HEADER_BYTES:
            raise ProtocolError(f"a header of {header} bytes, over the limit of {HEADER_BYTES}")
        rest = _read_exactly(fd, size - HEADER, clock)
        return decode(header.to_bytes(HEADER, "little") + rest)
    return decode(_read_exactly(fd, size, clock))
