"""transformers models saved whole, as notebooks do (`torch.save(model)`): the catalogue tests/test_benign_real.py
scans and tools/gen_allowlists.py records the transformers names of (the allowlist is what these pickles import, not
every class transformers defines). Tiny configurations, no download."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any


def models() -> dict[str, Any]:
    """One model per family people fine-tune most: encoders, decoders, an encoder-decoder and a vision model."""
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertForSequenceClassification,
        BertModel,
        DistilBertConfig,
        DistilBertForSequenceClassification,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        RobertaConfig,
        RobertaForMaskedLM,
        T5Config,
        T5ForConditionalGeneration,
        ViTConfig,
        ViTForImageClassification,
    )

    torch.manual_seed(7)
    bert = {"vocab_size": 50, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 8}  # fmt: skip
    vision = {key: value for key, value in bert.items() if key != "vocab_size"}
    t5 = {"vocab_size": 50, "d_model": 8, "d_kv": 4, "d_ff": 8, "num_layers": 1, "num_heads": 2}
    return {
        "bert": BertModel(BertConfig(**bert)),
        "bert-classifier": BertForSequenceClassification(BertConfig(**bert, num_labels=3)),
        "roberta-mlm": RobertaForMaskedLM(RobertaConfig(**bert)),
        "distilbert-classifier": DistilBertForSequenceClassification(
            DistilBertConfig(vocab_size=50, dim=8, n_layers=1, n_heads=2, hidden_dim=8)
        ),
        "gpt2": GPT2LMHeadModel(GPT2Config(vocab_size=50, n_embd=8, n_layer=1, n_head=2)),
        "llama": LlamaForCausalLM(LlamaConfig(**bert, num_key_value_heads=2)),
        "t5": T5ForConditionalGeneration(T5Config(**t5)),
        "vit": ViTForImageClassification(ViTConfig(**vision, image_size=8, patch_size=4)),
        # eager attention (its own classes in the encoder families), a masked-LM head, T5 v1.1's gated feed-forward
        "bert-mlm-eager": BertForMaskedLM._from_config(BertConfig(**bert), attn_implementation="eager"),
        "roberta-eager": RobertaForMaskedLM._from_config(RobertaConfig(**bert), attn_implementation="eager"),
        "distilbert-eager": DistilBertForSequenceClassification._from_config(
            DistilBertConfig(vocab_size=50, dim=8, n_layers=1, n_heads=2, hidden_dim=8), attn_implementation="eager"
        ),
        "t5-gated": T5ForConditionalGeneration(T5Config(**t5, feed_forward_proj="gated-gelu")),
    }


def save_models(out: Path) -> None:
    """Each model pickled whole (the names are those of torch.save's data.pkl: tensors aside, the same pickle)."""
    for name, model in models().items():
        (out / f"{name}.pkl").write_bytes(pickle.dumps(model, protocol=2))
