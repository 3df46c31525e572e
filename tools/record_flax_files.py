"""Keep Flax msgpack checkpoints as test data: files Flax and transformers wrote, and hostile variants of them,
each with what Flax's own loader did with it.

Why: Flax, JAX and transformers' Flax models are not test dependencies (JAX alone is 600 MB). The benign files
are what `flax.serialization.to_bytes` and `FlaxPreTrainedModel.save_pretrained` write; each hostile variant is one
of them with one thing changed, written with the `msgpack` package. Every file is then loaded in a fresh process with
`flax.serialization.msgpack_restore`, and how that went is written to the folder's README.

Run where flax, msgpack and transformers<5 are installed, in a virtualenv of its own, from the project root:
    python tools/record_flax_files.py tests/data/flax
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

LOAD = """
import sys, flax.serialization as s
try:
    state = s.msgpack_restore(open(sys.argv[1], "rb").read())
except BaseException as exc:
    print(f"refused: {type(exc).__name__}: {str(exc)[:100]}")
else:
    print("loaded")
"""


class _Payload:
    """A pickle that would run `echo` when unpickled (never unpickled here)."""

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return os.system, ("echo flax-payload",)


def benign(out: Path) -> dict[str, str]:
    import flax.linen as nn
    import flax.serialization as ser
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax.training import train_state

    class Tiny(nn.Module):
        @nn.compact
        def __call__(self, x: Any) -> Any:
            x = nn.Embed(64, 8)(x)
            x = nn.LayerNorm()(x)
            x = nn.Dense(8)(x)
            return nn.Dense(4, use_bias=False)(x)

    model = Tiny()
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 4), jnp.int32))
    notes: dict[str, str] = {}

    def write(name: str, data: bytes, note: str) -> None:
        (out / name).write_bytes(data)
        notes[name] = note

    write("linen-params.msgpack", ser.to_bytes(params), "`to_bytes` of a linen module's parameters (float32)")
    half = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), params)
    write("bfloat16-params.msgpack", ser.to_bytes(half), "the same parameters in bfloat16")
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adamw(1e-3))
    write("train-state.msgpack", ser.to_bytes(state), "a TrainState with AdamW's state (step, counts, moments)")
    mixed = {
        "scalar": np.float32(1.5), "int_scalar": np.int64(7), "complex": 1 + 2j, "text": "note", "flag": True,
        "none": None, "number": 3, "ratio": 0.25, "empty": {}, "zero_size": np.zeros((0, 3), np.float32),
        "rank0": np.array(2.0), "fp8": jnp.ones((3,), jnp.float8_e4m3fn), "int4": jnp.ones((2, 2), jnp.int4),
        "uint8": np.arange(6, dtype=np.uint8).reshape(2, 3), "bool": np.array([True, False]),
    }
    write("mixed-values.msgpack", ser.to_bytes(mixed), "scalars, complex, text, None, empty map, float8 and int4")
    previous = ser.MAX_CHUNK_SIZE
    ser.MAX_CHUNK_SIZE = 256  # Flax's own chunking (it splits arrays above 1 GiB), made to split small arrays
    try:
        write("chunked.msgpack", ser.to_bytes(params), "Flax's chunked layout (its chunk size set to 256 bytes)")
    finally:
        ser.MAX_CHUNK_SIZE = previous
    _transformers(out, notes)
    return notes


def _transformers(out: Path, notes: dict[str, str]) -> None:
    from transformers import BertConfig, FlaxBertModel

    config = BertConfig(vocab_size=99, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    model = FlaxBertModel(config, seed=0)
    whole = out / "bert-tiny-flax"
    model.save_pretrained(whole)
    notes["bert-tiny-flax/"] = "transformers 4.57 `FlaxBertModel.save_pretrained`: flax_model.msgpack and config.json"
    sharded = out / "bert-tiny-flax-sharded"
    model.save_pretrained(sharded, max_shard_size="20KB")
    notes["bert-tiny-flax-sharded/"] = "the same model in shards of 20 kB, with flax_model.msgpack.index.json"


def hostile(out: Path, source: bytes, chunked_source: bytes) -> dict[str, str]:
    import msgpack

    payload = pickle.dumps(_Payload(), protocol=2)
    state = msgpack.unpackb(source, raw=False, strict_map_key=False)  # arrays stay ExtType: nothing is decoded
    notes: dict[str, str] = {}

    def write(name: str, data: bytes, note: str) -> None:
        (out / name).write_bytes(data)
        notes[name] = note

    def first_array(tree: Any) -> tuple[dict[str, Any], str]:
        for key, value in tree.items():
            if isinstance(value, msgpack.ExtType):
                return tree, key
            if isinstance(value, dict):
                found = first_array(value)
                if found:
                    return found
        return {}, ""

    def changed(change: Any) -> dict[str, Any]:
        tree = msgpack.unpackb(source, raw=False, strict_map_key=False)
        change(tree)
        return tree

    def with_array(shape: Any, dtype: Any, data: bytes, code: int = 1, extra: bytes = b"") -> Any:
        def change(tree: dict[str, Any]) -> None:
            holder, key = first_array(tree)
            holder[key] = msgpack.ExtType(code, msgpack.packb((shape, dtype, data), use_bin_type=True) + extra)

        return change

    pack = msgpack.packb
    write("truncated.msgpack", source[: len(source) * 2 // 3], "the file cut at two thirds")
    write("pickle-after.msgpack", source + payload, "a pickle appended after the state dict")
    write("shape-larger.msgpack", pack(changed(with_array((64, 9), "float32", bytes(64 * 8 * 4)))),
          "an array declaring 64x9 float32 with the bytes of 64x8")
    write("shape-inferred.msgpack", pack(changed(with_array((-1,), "float32", bytes(16)))),
          "an array of shape (-1,), which NumPy infers")
    write("dtype-big-endian.msgpack", pack(changed(with_array((4,), ">f4", bytes(16)))),
          "an array whose dtype name is '>f4' (big-endian float32)")
    write("array-extra-field.msgpack", pack(changed(with_array((4,), "float32", bytes(16), extra=b"\xc0"))),
          "an array payload with one more value after [shape, dtype, bytes]")
    as_array = msgpack.ExtType(1, payload)
    write("array-pickle-payload.msgpack", pack(changed(lambda t: t.__setitem__("params_", as_array))),
          "an array extension whose payload is a pickle")
    write("extension-pickle.msgpack", pack(changed(lambda t: t.__setitem__("extra", msgpack.ExtType(42, payload)))),
          "a value of extension type 42 holding a pickle")
    write("bytes-pickle.msgpack", pack(changed(lambda t: t.__setitem__("extra", payload)), use_bin_type=True),
          "a byte string value holding a pickle")
    write("timestamp.msgpack", pack(changed(lambda t: t.__setitem__("saved", msgpack.Timestamp(0)))),
          "a msgpack timestamp value (extension type -1)")
    key = next(iter(state))
    body = pack(state[key])
    duplicate = b"\x82" + pack(key) + body + pack(key) + pack({"other": 1})
    write("duplicate-key.msgpack", duplicate, "the top-level key twice, the second copy replacing the first")
    write("deep-nesting.msgpack", b"\x81" + pack("deep") + b"\x91" * 1024 + b"\xc0",
          "1,025 nested containers, one more than msgpack reads")
    write("key-not-utf8.msgpack", b"\x81\xa2\xff\xfe" + body, "a key that is not UTF-8")
    reserved = b"\x82" + pack(key) + body + pack("x") + b"\xc1"
    write("reserved-byte.msgpack", reserved, "byte 0xc1, which msgpack reserves, as a value")

    def chunk_change(drop: bool) -> Any:
        def change(tree: dict[str, Any]) -> None:
            chunked = _find_chunked(tree)
            chunks = chunked["chunks"]
            if drop:
                del chunks[str(len(chunks) - 1)]
            else:
                chunked["shape"]["0"] = chunked["shape"]["0"] + 1

        return change

    for name, drop, note in (("chunked-chunk-missing.msgpack", True, "a chunked array missing its last chunk"),
                             ("chunked-shape-larger.msgpack", False, "a chunked array whose shape is one row longer")):
        tree = msgpack.unpackb(chunked_source, raw=False, strict_map_key=False)
        chunk_change(drop)(tree)
        write(name, pack(tree), note)
    return notes


def _find_chunked(tree: dict[str, Any]) -> dict[str, Any]:
    for value in tree.values():
        if isinstance(value, dict):
            if "__msgpack_chunked_array__" in value:
                return value
            found = _find_chunked(value)
            if found:
                return found
    return {}


def outcome(path: Path) -> str:
    done = subprocess.run([sys.executable, "-c", LOAD, str(path)], capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def main() -> None:
    warnings.filterwarnings("ignore")
    out = Path(sys.argv[1])
    (out / "hostile").mkdir(parents=True, exist_ok=True)
    notes = benign(out)
    bad = hostile(out / "hostile", (out / "linen-params.msgpack").read_bytes(), (out / "chunked.msgpack").read_bytes())
    rows = ["# Flax msgpack checkpoints", "", "Made by `tools/record_flax_files.py` (flax, msgpack, transformers<5);",
            "each file loaded with `flax.serialization.msgpack_restore` in a fresh process.", "",
            "| file | what it is | msgpack_restore |", "|---|---|---|"]
    import flax
    import msgpack

    rows[2] = f"Made by `tools/record_flax_files.py` (flax {flax.__version__}, msgpack {msgpack.version});"
    for name, note in notes.items():
        target = out / name
        files = sorted(target.glob("*.msgpack")) if target.is_dir() else [target]
        for file in files:
            rows.append(f"| `{file.relative_to(out)}` | {note} | {outcome(file)} |")
    for name, note in bad.items():
        rows.append(f"| `hostile/{name}` | {note} | {outcome(out / 'hostile' / name)} |")
    (out / "README.md").write_text("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
