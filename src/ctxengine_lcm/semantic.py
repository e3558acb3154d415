"""The optional semantic index of ``lcm_grep`` (``[engines.lcm] semantic_index = true``).

A question worded in other words than its fact ("where will our workplace relocate"
for "the office moves to Berlin in March") shares no term with it, and lexical search
(even with query.py's alternatives) cannot find it. With the index on,
a relevance search of plain words also takes the messages nearest to the query by
cosine similarity of their embeddings as extra candidates, ranked below the query's
own matches the way query alternatives are (:func:`~ctxengine_lcm.query.merge_candidates`).

The embedding model is the static word-vector table the ``wordllama`` wheel bundles
(32,000 tokens x 256 dimensions; 32 MB in memory as float32): a text's vector is the
mean of its tokens' vectors, normalized. Nothing is downloaded: the table and the
tokenizer are read from the installed wheel's files (``WordLlama.load`` looks for the
tokenizer in the wrong folder and would fetch it from Hugging Face), and the
``wordllama`` package itself is never imported (its import configures the
application's root logger).

Messages are embedded lazily, by the first relevance search that needs them (newest
first, within the call's time budget): ingest costs nothing, histories stored before
the index was turned on or imported later are covered the same way, and a session that
is never searched is never embedded. Vectors are stored as float16 (512 bytes a
message) in the SQLite store; PostgreSQL is not supported (:func:`require`).
"""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .store import SearchHit, StoredMessage

if TYPE_CHECKING:
    import numpy as np

INSTALL_HINT = 'pip install "ctxengine-lcm[semantic]"'
#: What the index needs installed (wordllama for its bundled files only).
_PACKAGES = ("wordllama", "numpy", "safetensors", "tokenizers")
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
#: Characters of a text that are embedded: a mean of token vectors gains nothing from a
#: long log's tail, and tokenizing it costs time per character.
MAX_TEXT_CHARS = 2_000
#: Texts tokenized per batch.
BATCH = 256
#: Best similarity of the semantic candidates relative to the query's own best match
#: (the factor of a synonym: weaker evidence than the words as written).
SEMANTIC_FACTOR = 0.5
#: Similarity below which a message is no candidate (unrelated texts score about 0).
MIN_SIMILARITY = 0.1


class SemanticIndexUnavailable(RuntimeError):
    """``semantic_index`` is on but cannot work here; the message names the fix."""


class VectorStore(Protocol):
    """What the index needs from a store (the SQLite one implements it)."""

    def unembedded_message_ids(self, conversation_id: int, newest: int) -> list[int]: ...

    def message_beginnings(
        self, ids: Sequence[int], chars: int
    ) -> list[tuple[int, float, str]]: ...

    def put_message_vectors(self, rows: Sequence[tuple[int, int, float, bytes]]) -> None: ...

    def message_vectors(
        self,
        conversation_ids: Sequence[int],
        since: float | None,
        until: float | None,
        limit: int,
    ) -> list[tuple[int, bytes]]: ...

    def messages_by_id(self, ids: Iterable[int]) -> dict[int, StoredMessage]: ...

    def read_deadline(self, deadline: float | None) -> AbstractContextManager[None]: ...


def require(postgres: bool) -> None:
    """Fail with the fix when the index is on but cannot work: a PostgreSQL store, or
    the ``semantic`` extra not installed (checked without importing anything)."""
    if postgres:
        raise SemanticIndexUnavailable(
            "[engines.lcm] semantic_index is supported with the SQLite store only; "
            "turn it off for a PostgreSQL database"
        )
    missing = [name for name in _PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise SemanticIndexUnavailable(
            f"[engines.lcm] semantic_index is on but {', '.join(missing)} is not installed; "
            f"run: {INSTALL_HINT} (or set semantic_index = false)"
        )


class Embedder:
    """Unit vectors of texts from the bundled word-vector table (one per process)."""

    def __init__(self) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("wordllama")
        if spec is None or not spec.submodule_search_locations:
            raise SemanticIndexUnavailable(f"wordllama is not installed; run: {INSTALL_HINT}")
        root = Path(next(iter(spec.submodule_search_locations)))
        self._np = np
        # Widened once from the bundled float16 (32 MB instead of 16): averaging float16
        # rows costs five times as much per text.
        table = load_file(str(root.joinpath(*_WEIGHTS)))["embedding.weight"]
        self._table = np.ascontiguousarray(table, dtype=np.float32)
        self._tokenizer = Tokenizer.from_file(str(root.joinpath(*_TOKENIZER)))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self.dimensions = int(self._table.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dimensions) float32 matrix, one unit row per text (zero: no tokens)."""
        np = self._np
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            batch = [t[:MAX_TEXT_CHARS] for t in texts[start : start + BATCH]]
            # Without character offsets: a fifth less tokenizing time.
            encoded = self._tokenizer.encode_batch_fast(batch, add_special_tokens=False)
            for row, encoding in enumerate(encoded, start):
                if encoding.ids:
                    out[row] = self._table[encoding.ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def to_blob(self, vector: np.ndarray) -> bytes:
        return vector.astype(self._np.float16).tobytes()

    def similarities(self, query: np.ndarray, blobs: Sequence[bytes]) -> np.ndarray:
        """Cosine similarity of the unit ``query`` to each stored unit vector."""
        np = self._np
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), -1)
        return matrix.astype(np.float32) @ query


_lock = threading.Lock()
_embedder: Embedder | None = None


def embedder() -> Embedder:
    """The process's embedder, loaded on first use (0.3 s CPU; 32 MB)."""
    global _embedder
    with _lock:
        if _embedder is None:
            _embedder = Embedder()
        return _embedder


def index_newest(
    store: VectorStore, conversation_ids: Sequence[int], newest: int, deadline: float
) -> int:
    """Embed and store the vectors of the newest ``newest`` messages of each conversation
    that have none yet, batch by batch until ``deadline``; returns how many.

    The first batch is embedded whatever the time: loading the model (once per process)
    can take the whole budget on a loaded machine, and a search that never embeds would
    never find by meaning. One batch is bounded (``BATCH`` texts of ``MAX_TEXT_CHARS``)."""
    model = embedder()
    done = 0
    for conversation_id in conversation_ids:
        missing = store.unembedded_message_ids(conversation_id, newest)
        for start in range(0, len(missing), BATCH):
            if done and time.monotonic() >= deadline:
                return done
            rows = store.message_beginnings(missing[start : start + BATCH], MAX_TEXT_CHARS)
            vectors = model.embed([text for _, _, text in rows])
            store.put_message_vectors(
                [
                    (message_id, conversation_id, created_at, model.to_blob(vector))
                    for (message_id, created_at, _), vector in zip(rows, vectors, strict=True)
                ]
            )
            done += len(rows)
    return done


def nearest_messages(
    store: VectorStore,
    conversation_ids: Sequence[int],
    query: str,
    since: float | None,
    until: float | None,
    options: tuple[int, int, int],
    deadline: float,
) -> list[SearchHit]:
    """The messages of ``conversation_ids`` nearest to ``query`` as search hits (score:
    negated similarity, lower is better, as the stores report), their text cut to
    ``preview`` characters. ``options``: (candidates, vectors scanned, preview)."""
    k, scanned, preview = options
    # Its reads are bounded by the configuration, and its first batch must run whatever
    # the time: not cut short by the caller's read deadline (its own is checked between
    # batches).
    with store.read_deadline(None):
        index_newest(store, conversation_ids, scanned, deadline)
    rows = store.message_vectors(conversation_ids, since, until, scanned)
    if not rows:
        return []
    model = embedder()
    query_vector = model.embed([query])[0]
    scores = model.similarities(query_vector, [blob for _, blob in rows])
    order = scores.argsort()[::-1][:k]
    best = [(rows[i][0], float(scores[i])) for i in order if scores[i] >= MIN_SIMILARITY]
    messages = store.messages_by_id([message_id for message_id, _ in best])
    return [
        _hit(messages[message_id], similarity, preview)
        for message_id, similarity in best
        if message_id in messages
    ]


def _hit(message: StoredMessage, similarity: float, preview: int) -> SearchHit:
    return SearchHit(
        kind="message",
        id=message.id,
        conversation_id=message.conversation_id,
        created_at=message.created_at,
        text=message.content[:preview],
        role=message.role,
        seq=message.seq,
        score=-similarity,
        tool_call=message.tool_name is not None,
    )
