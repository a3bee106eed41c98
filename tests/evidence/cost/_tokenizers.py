"""The bundled tokenizer with `encode_iterable` written otherwise: the cost modules' shared
part (each module names one way)."""

from collections.abc import Iterable, Iterator

from cs336_basics.tokenizer import Tokenizer


class ReadsWholeStream(Tokenizer):
    """Joins the whole stream into one text, then encodes it."""

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        yield from self.encode("".join(iterable))


class ReturnsList(Tokenizer):
    """Streams its input as the bundled tokenizer does, but gathers every id into a list it
    returns at the end."""

    def encode_iterable(self, iterable: Iterable[str]) -> list[int]:
        return list(super().encode_iterable(iterable))


class KeepsHistory(Tokenizer):
    """Yields each id as the bundled tokenizer does, and also keeps them all."""

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        self.history: list[int] = []
        for token in super().encode_iterable(iterable):
            self.history.append(token)
            yield token


class Chunked(Tokenizer):
    """Gathers lines into chunks of at least `CHUNK` characters and encodes each: a chunk
    ends before a line that starts with neither a space nor a newline, where no pre-token
    can span the cut (a newline there is a pre-token of its own in the whole text too)."""

    CHUNK = 1 << 16

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        buffer: list[str] = []
        held = 0
        for line in iterable:
            if held >= self.CHUNK and line[:1].strip() and buffer[-1].endswith("\n"):
                yield from self.encode("".join(buffer))
                buffer, held = [], 0
            buffer.append(line)
            held += len(line)
        if buffer:
            yield from self.encode("".join(buffer))


class LargeChunks(Chunked):
    """Chunks of 200,000 characters: more than the first round's streams hold."""

    CHUNK = 200_000


class RankOrder(Tokenizer):
    """Encodes each pre-token by walking every merge in rank order and applying it wherever
    it occurs: the same ids, at a cost that grows with the number of merges. It remembers the
    pre-tokens it has encoded, as many students' tokenizers do."""

    def __init__(self, vocab, merges, special_tokens=None):
        super().__init__(vocab, merges, special_tokens)
        self._in_order = list(merges)
        self._seen: dict[str, list[int]] = {}

    def _encode_pretoken(self, pretoken: str) -> list[int]:
        if pretoken not in self._seen:
            self._seen[pretoken] = self._walk(pretoken)
        return self._seen[pretoken]

    def _walk(self, pretoken: str) -> list[int]:
        parts = [bytes([b]) for b in pretoken.encode("utf-8")]
        for first, second in self._in_order:
            if len(parts) < 2:
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == first and parts[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return [self._ids[p] for p in parts]
