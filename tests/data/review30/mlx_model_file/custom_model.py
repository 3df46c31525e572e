from dataclasses import dataclass


@dataclass
class ModelArgs:
    model_type: str = "llama"


class Model:
    def __init__(self, args: ModelArgs) -> None:
        self.args = args
