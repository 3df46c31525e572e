from transformers import PretrainedConfig


class RADIOConfig(PretrainedConfig):
    model_type = "radio"
