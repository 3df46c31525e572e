"""Write the KerasHub presets in this folder with KerasHub itself.

KerasHub (and the TensorFlow it runs on here) is not a test dependency, so the files are kept, made once with
`pip install tensorflow-cpu==2.21.0 keras-hub==0.32.0` and `KERAS_BACKEND=tensorflow python
tests/data/keras_hub/make.py`. Tiny models built from their configs (nothing is downloaded):

benign/bert-full/         BertTextClassifier with its preprocessor and WordPiece tokenizer, `save_to_preset`:
                          config.json, task.json, preprocessor.json, tokenizer.json, weights, assets/
benign/llama-causallm/    LlamaCausalLM without a preprocessor, `save_to_preset`
benign/gemma-backbone.keras  a GemmaBackbone saved as a Keras archive
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).resolve().parent


def main() -> None:
    import keras_hub

    out = HERE / "benign"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer=tokenizer, sequence_length=8)
    bert = keras_hub.models.BertBackbone(vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=8,
                                         intermediate_dim=16, max_sequence_length=16)
    keras_hub.models.BertTextClassifier(backbone=bert, num_classes=2, preprocessor=preprocessor).save_to_preset(
        out / "bert-full")
    llama = keras_hub.models.LlamaBackbone(vocabulary_size=100, num_layers=1, num_query_heads=2,
                                           num_key_value_heads=1, hidden_dim=8, intermediate_dim=16)
    keras_hub.models.LlamaCausalLM(backbone=llama, preprocessor=None).save_to_preset(out / "llama-causallm")
    keras_hub.models.GemmaBackbone(vocabulary_size=100, num_layers=1, num_query_heads=2, num_key_value_heads=1,
                                   hidden_dim=8, intermediate_dim=16, head_dim=4).save(out / "gemma-backbone.keras")


if __name__ == "__main__":
    main()
