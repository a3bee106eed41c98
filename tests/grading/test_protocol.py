"""The wire format: what the judge accepts from a worker, and what it refuses unread."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load

from cs336_harness.grading.sandbox.timekeeping import Timeout
from cs336_harness.grading.worker import protocol
from cs336_harness.grading.worker.protocol import (
    HEADER,
    HEADER_BYTES,
    MAX_TENSORS,
    ProtocolError,
    Unsendable,
    decode,
    encode,
    read_frame,
    write_all,
    write_frame,
)
from cs336_harness.paths import REPO_ROOT


class Lying(torch.Tensor):
    def __eq__(self, other):
        return True


def _body(frame: bytes) -> bytes:
    return frame[HEADER:]


def test_a_message_round_trips_as_plain_tensors():
    x = torch.arange(6.0).reshape(2, 3).as_subclass(Lying)
    message = {
        "call": "run_rope",
        "args": [1, 2.5, None],
        "kwargs": {"x": x.t(), "w": {"a.b": torch.ones(2, dtype=torch.bfloat16)}, "f": True},
    }
    back = decode(_body(encode(message)))
    assert type(back["kwargs"]["x"]) is torch.Tensor  # the subclass is gone
    assert torch.equal(back["kwargs"]["x"], torch.arange(6.0).reshape(2, 3).t())
    assert back["kwargs"]["w"]["a.b"].dtype == torch.bfloat16
    assert back["args"] == [1, 2.5, None] and back["kwargs"]["f"] is True


def test_tensors_sharing_storage_go_apart_and_resolved():
    x = torch.arange(6.0).reshape(2, 3)
    z = torch.tensor([1 + 2j, 3 - 1j])
    message = {"value": [x, x, x[0], x[1]], "conj": z.conj()}
    tensors = load(_body(encode(message)))  # as sent: safetensors refuses shared storage
    assert [torch.equal(tensors[f"t{i}"], t) for i, t in enumerate(message["value"])] == [True] * 4
    assert torch.equal(tensors["t4"], torch.tensor([1 - 2j, 3 + 1j]))


# A fresh interpreter encodes a reply of SIZE bytes with RLIMIT_DATA at what it holds
# already plus `factor` times SIZE (the reply's own tensor is held when the frame is built).
_ENCODE_UNDER_A_LIMIT = """
import resource, sys
import torch
from cs336_harness.grading.worker.protocol import encode
SIZE = 128 << 20
value = torch.ones(SIZE // 4)
held = next(int(line.split()[1]) << 10 for line in open("/proc/self/status")
            if line.startswith("VmData"))
limit = held + int(float(sys.argv[1]) * SIZE)
resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
print(len(encode({"value": value})))
"""


def test_a_reply_costs_the_worker_twice_its_size_not_three_times(tmp_path: Path):
    """safetensors builds the frame in Rust and copies it into Python bytes: twice the
    reply's size, the least `save` allows. A copy of each tensor on top (a clone) would
    leave the worker at its memory limit with a reply refused only for being large."""
    script = tmp_path / "encode.py"
    script.write_text(_ENCODE_UNDER_A_LIMIT)
    done = subprocess.run(
        [sys.executable, str(script), "2.5"], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 128 << 20


def test_a_list_of_plain_values_is_taken_whole(monkeypatch: pytest.MonkeyPatch):
    """A tokenizer's ids are not walked one by one, on either side (a grading sends some
    150,000), and come back as they went."""
    walked = []
    for name in ("_pack", "_unpack"):
        step = getattr(protocol, name)
        monkeypatch.setattr(
            protocol, name, lambda *a, step=step, name=name: walked.append(name) or step(*a)
        )
    ids = list(range(10_000))
    message = {"value": {"encoded": [ids, tuple(ids[:5])], "mixed": [1, 2.5, True, None, "a"]}}
    back = decode(_body(encode(message)))
    assert back == {"value": {"encoded": [ids, ids[:5]], "mixed": [1, 2.5, True, None, "a"]}}
    assert len(walked) < 30, f"{len(walked)} steps for two lists of plain values"


def test_values_without_a_plain_form_are_unsendable():
    for value in (torch.nn.Linear(2, 2), object(), {1: "int key"}, {"__tensor__": "t0"}):
        with pytest.raises(Unsendable):
            encode({"value": value})


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not safetensors",
        # A header that declares more data than follows.
        b'5\x00\x00\x00\x00\x00\x00\x00{"t0": {"dtype": "F32", "shape": [1000], '
        b'"data_offsets": [0, 4000]}}',
    ],
)
def test_malformed_frames_are_refused(body: bytes):
    with pytest.raises(ProtocolError):
        decode(body)


def test_a_reference_to_a_missing_tensor_is_refused():
    frame = encode({"value": torch.ones(1)})
    # Only the message's reference changes (escaped, inside the metadata string).
    forged = frame.replace(b'\\"t0\\"', b'\\"t9\\"')
    assert forged != frame
    with pytest.raises(ProtocolError, match="missing tensor"):
        decode(_body(forged))


def test_a_dtype_outside_the_protocol_is_refused():
    with pytest.raises(ProtocolError, match="complex64"):
        decode(_body(encode({"value": torch.ones(2, dtype=torch.complex64)})))


def test_an_oversized_frame_is_refused_before_its_body_is_read():
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, (1 << 40).to_bytes(HEADER, "little"))
        with pytest.raises(ProtocolError, match="over the limit"):
            read_frame(read_end, max_bytes=1 << 20)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_silent_writer_times_out_and_a_full_pipe_does_not_block():
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(Timeout):
            read_frame(read_end, deadline=0.0)
        os.set_blocking(write_end, False)
        big = {"value": torch.zeros(1 << 20)}  # 4 MiB: more than a pipe holds
        with pytest.raises(Timeout):
            write_frame(write_end, big, deadline=time.monotonic() + 0.2)
    finally:
        os.close(read_end)
        os.close(write_end)


def _write_until_closed(fd: int, data: bytes) -> None:
    """Write `data` to a blocking pipe until it is all out or the reader has gone."""
    with contextlib.suppress(BrokenPipeError):
        write_all(fd, data)


def test_a_header_too_large_to_parse_is_refused_unparsed():
    """A 30-million-element list fits under the reply limit as JSON, and costs ~820 MiB to
    decode: its header is refused from its length alone, and so is one naming too many
    tensors."""
    frame = encode({"value": [0] * (HEADER_BYTES // 2)})
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=_write_until_closed, args=(write_end, frame))
    writer.start()
    try:
        with pytest.raises(ProtocolError, match=f"over the limit of {HEADER_BYTES}"):
            read_frame(read_end, max_bytes=len(frame))
    finally:
        # Closing the read end first breaks the writer's pipe, so the thread ends.
        os.close(read_end)
        writer.join()
        os.close(write_end)
    with pytest.raises(ProtocolError, match="over the limit"):
        decode(_body(frame))
    many = encode({"value": [torch.zeros(1)] * (MAX_TENSORS + 1)})
    with pytest.raises(ProtocolError, match=f"{MAX_TENSORS + 1} tensors, over the limit"):
        decode(_body(many))
    assert decode(_body(encode({"value": [torch.zeros(1)] * MAX_TENSORS})))["value"]
