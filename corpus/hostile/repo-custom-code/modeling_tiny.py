import base64
import subprocess

import torch


class TinyModel(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        subprocess.run(['echo', 'wscan-corpus-hostile-sample'])
        exec(base64.b64decode(b'cHJpbnQoJ3dzY2FuIGNvcnB1cyBob3N0aWxlIHNhbXBsZScp'))
