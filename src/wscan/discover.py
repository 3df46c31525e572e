"""Turn command-line paths into the files to scan, reporting everything that will not be scanned.

Symlinks are followed only while they stay inside the scan root; a Hugging Face cache is the one
layout where snapshot links point outside their folder (into the repo's `blobs/`) by design. Symlinked
folders are never walked (their target is scanned where it lies, when that is inside the root), but loaders
follow them, so each is reported with where it leads. Special files are never opened (a FIFO would block the
scan).
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wscan.git_layout import GIT_FOLDER, is_git_folder
from wscan.lookup import resolve, walk
from wscan.model import Location, Observation
from wscan.module_shadowing import shadowing_link, weights_at_or_below

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1"
CODE_SUFFIXES = (".py",)  # what transformers and sentence-transformers import from a model folder
# What loaders open by name from a model folder (from_pretrained's model.safetensors, pytorch_model.bin, ...).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5", ".keras", ".pkl",
                   ".npz", ".npy", ".joblib", ".msgpack", ".pb", ".index.json", ".tar", ".nemo")  # timm: *.pth.tar
# ... and the configuration and tokenizer files they open by name: a link out feeds the loader a file nobody scanned
# (a review's tokenizer.json and tokenizer_config.json linked to files elsewhere, which transformers followed).
# The tokenizer files are every default name of transformers' `vocab_files_names` (4.57.6).
LOADER_FILES = frozenset({
    "config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json", "special_tokens_map.json",
    "added_tokens.json", "chat_template.json", "chat_template.jinja", "preprocessor_config.json",
    "processor_config.json", "video_preprocessor_config.json", "audio_tokenizer_config.json", "adapter_config.json",
    "modules.json", "config_sentence_transformers.json", "sentence_bert_config.json", "model_index.json",
    "modular_model_index.json", "MLmodel", "speaker_embeddings_path.json", "open_clip_config.json",
    "artists.json", "bpe.codes", "byte_maps.json", "dict.txt", "emoji.json", "entity_vocab.json", "genres.json",
    "lyrics.json", "merges.txt", "normalizer.json", "prophetnet.tokenizer", "sentencepiece.bpe.model",
    "sentencepiece.model", "source.spm", "spiece.model", "spm.model", "spm_char.model", "target.spm",
    "target_vocab.json", "tokenizer.model", "vocab-src.json", "vocab-tgt.json", "vocab.bin", "vocab.json", "vocab.pkl",
    "vocab.txt", "word_pronunciation.json", "word_shape.json",
    # sentence-transformers' module configs (every JSON name in its sources, 5.1): the Transformer module falls back
    # through the sentence_<model>_config.json names when sentence_bert_config.json is absent (helper 265's link).
    "sentence_roberta_config.json", "sentence_distilbert_config.json", "sentence_camembert_config.json",
    "sentence_albert_config.json", "sentence_xlm-roberta_config.json", "sentence_xlnet_config.json",
    "router_config.json", "wordembedding_config.json", "whitespacetokenizer_config.json",
    "phrasetokenizer_config.json", "cnn_config.json", "lstm_config.json", "idf.json",
    # A fast tokenizer without tokenizer.json converts a Mistral vocabulary it finds by name (`tekken.json`, and
    # `tokenizer.model` with any dots after it: MISTRAL_VOCABULARY); sentence-transformers reads README.md into the
    # model card it writes back at save() and push_to_hub() (helper 267 read both through links).
    "tekken.json", "README.md",
    # GluonTS's Predictor.deserialize: the predictor class (gluonts-config.json, type.txt before 0.16) and the files
    # its serde decodes, importing and calling the classes they name (0.14.4).
    "gluonts-config.json", "type.txt", "predictor.json", "parameters.json", "input_transform.json",
})  # fmt: skip
MISTRAL_VOCABULARY = re.compile(r"^tokenizer\.model\.+$")  # what transformers' `tokenizer\.model\.*` search can name
FOLDER_KINDS = frozenset({"file.case_collision"})  # about a folder's names: its files are scanned as ever
_LOADER_FILES_FOLDED = frozenset(name.lower() for name in LOADER_FILES)  # as a case-insensitive file system opens them


def loader_file(name: str) -> bool:
    """A name loaders open from a model folder by name (LOADER_FILES, a versioned config, a Mistral vocabulary), in
    any case: macOS and Windows open `CONFIG.JSON` for config.json."""
    folded = name.lower()
    return folded in _LOADER_FILES_FOLDED or versioned_config(folded) or MISTRAL_VOCABULARY.match(folded) is not None


def versioned_config(name: str) -> bool:
    """A `config.<version>.json`, which from_pretrained loads instead of config.json when config.json's
    `configuration_files` lists it (transformers' own test: the prefix and suffix, the version being whatever
    packaging parses, spaces and line breaks around it included: review 41)."""
    return name.startswith("config.") and name.endswith(".json") and name != "config.json"
LOADER_FOLDERS = frozenset({"additional_chat_templates"})  # every file in them is read by name (a template each)
# ... and at any depth under these: Keras and TensorFlow SavedModel assets (a lookup layer's vocabulary.txt), which
# the loader opens by name, following a link (a review had a Keras folder's vocabulary read a file outside it).
ASSET_FOLDERS = frozenset({"assets", "assets.extra"})
MAX_TARGET = 500  # of a link's target, shown
# Installed packages' metadata: importlib.metadata reads it from every folder on sys.path, the working folder first, so
# beside the weights it makes a loader that checks a package is installed (transformers' quantizers) import the
# folder's module of that name (helper 241: `amd_quark-0.9.dist-info` and `quark/` beside a quark-quantized model).
METADATA_FOLDERS = (".dist-info", ".egg-info")
INSIDE, OUTSIDE, ON_SHARE = "inside", "outside", "on a network share"  # where a path leads (`leads`)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A regular file to scan: where to open it and how to name it in reports."""

    real_path: Path
    display: str
    size: int


def display_path(path: Path) -> str:
    """Path relative to the working directory when inside it (what SARIF wants), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_posix()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _hf_repo_root(link: Path) -> Path | None:
    """For .../models--org--name/snapshots/<rev>/file, the models--org--name folder."""
    parts = link.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "snapshots" and i > 0 and "--" in parts[i - 1]:
            return Path(*parts[:i])
    return None


def _hf_cache_repo(folder: Path) -> bool:
    """A Hugging Face cache repo folder: models--org--name, datasets--org--name or spaces--org--name."""
    return os.path.basename(os.path.abspath(folder)).startswith(("models--", "datasets--", "spaces--"))


def _stays_inside(link: Path, target: Path, root: Path) -> bool:
    """Whether a link's resolved target stays inside the scan root (or, in a Hugging Face cache, its repo)."""
    hf_root = _hf_repo_root(Path(os.path.abspath(link)))
    return _inside(target, root) or (hf_root is not None and _inside(target, Path(os.path.realpath(hf_root))))


def leads(path: Path, root: Path) -> str:
    """Where `path` leads from the real folder `root`, following links: INSIDE it (or, in a Hugging Face cache, its
    repo), OUTSIDE, or ON_SHARE, an automount share that is not looked up."""
    target = resolve(path, root)
    if target is None:
        return ON_SHARE
    return INSIDE if _stays_inside(path, Path(target), root) else OUTSIDE


def _skip(display: str, kind: str, **attrs: str | int | bool) -> Observation:
    return Observation(kind, Location(display), attrs)


def discover(paths: list[Path]) -> Iterator[FileEntry | Observation]:
    """Yield every file under `paths` in a stable order, or an observation saying why it is not scanned."""
    for path in paths:
        if not os.path.lexists(path):
            yield _skip(display_path(path), "file.missing")
            continue
        if path.is_dir():  # a link to a folder, named on the command line, is walked too (helper 249: it was skipped)
            yield from _walk(path)
        else:
            root = Path(os.path.abspath(path)).parent
            yield from _entry(Path(os.path.abspath(path)), Path(os.path.realpath(root)))


def _walk(top: Path, root: Path | None = None) -> Iterator[FileEntry | Observation]:
    """Each folder's files, then its subfolders, in name order. A folder that cannot be listed is reported, not
    passed over. A Hugging Face cache's blobs come last, those no file walked so far leads to (a snapshot that
    is a link to the blobs folder, which is not walked: helper 249 loaded a pickle through one)."""
    root = Path(os.path.realpath(top)) if root is None else root
    blobs: list[Path] = []  # passed over: read through the snapshots' links
    reached: set[str] = set()  # where the files walked lead, once a blobs folder was passed over
    for item in _walk_folders(top, root, blobs):
        if blobs and isinstance(item, FileEntry):
            reached.add(os.path.realpath(item.real_path))
        yield item
    for folder in blobs:
        for item in _walk(folder, root):
            if not (isinstance(item, FileEntry) and os.path.realpath(item.real_path) in reached):
                yield item


def _walk_folders(top: Path, root: Path, blobs: list[Path]) -> Iterator[FileEntry | Observation]:
    for folder in walk(top):
        here = folder.path
        if folder.error is not None:
            yield _skip(display_path(here), "file.unreadable", reason=folder.error.strerror or str(folder.error))
            continue
        # In a Hugging Face cache, blobs are reached through the snapshots that name them. Only in a real cache
        # repo folder: elsewhere blobs/ is just a folder (a loader reads it; an attestation hashes it).
        passed_over: set[str] = set()
        if "blobs" in folder.folders and "snapshots" in folder.folders and _hf_cache_repo(here):
            folder.folders.remove("blobs")
            passed_over.add("blobs")  # a folder still: never taken for a special file (WS-FILE-008)
            blobs.append(here / "blobs")
        shown = display_path(here)  # once per folder: a file's display name is its folder's plus its own
        prefix = "" if shown == "." else shown.rstrip("/") + "/"
        targets = {entry.name: resolve(here / entry.name, root) for entry in folder.entries if entry.is_symlink()}
        # A link onto a network share is not looked up, so never taken for a folder: it is reported as a file.
        linked = {name for name, target in targets.items() if target is not None and os.path.isdir(here / name)}
        for name in sorted(linked):
            target = Path(str(targets[name]))
            # git follows a `.git` or a git folder's hooks that is a link, and reads what is there (WS-REPO-039)
            git_folder = name == GIT_FOLDER or (name == "hooks" and is_git_folder(here))
            # Only a file's link may lead out of the root into its Hugging Face cache repo: a file is read through
            # its link, a folder is not walked, and a snapshot linked to the blobs folder hid a pickle (helper 249).
            yield _skip(prefix + name, "file.symlink_dir", target=target.as_posix(), outside=not _inside(target, root),
                        shadows=shadowing_link(here / name), git_folder=git_folder)  # fmt: skip
        for name in sorted(folder.folders):
            if name.lower().endswith(METADATA_FOLDERS) and weights_at_or_below(here):
                yield _skip(prefix + name, "code.package_metadata", shadows=name.split("-", 1)[0].split(".", 1)[0])
        yield from _case_collisions(prefix, [entry.name for entry in folder.entries], set(folder.folders))
        subfolders = set(folder.folders)
        for entry in folder.entries:
            if entry.name not in linked and entry.name not in subfolders and entry.name not in passed_over:
                yield from _entry(here / entry.name, root, prefix + entry.name)


def _case_collisions(prefix: str, names: list[str], folders: set[str]) -> Iterator[Observation]:
    """Names in one folder that differ only in case (or in Unicode normalization): on a case-insensitive file system
    (macOS, Windows) they are one file, whichever copy was written last, so a loader opening `config.json` may get
    the `CONFIG.JSON` that was scanned as some other file. `loader` when one is a name loaders open or code."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(unicodedata.normalize("NFC", name).lower(), []).append(name)
    for key, group in groups.items():
        if len(group) < 2:
            continue
        loader = loader_file(key) or key.endswith(WEIGHT_SUFFIXES + CODE_SUFFIXES) or not folders.isdisjoint(group)
        yield _skip(prefix + group[0], "file.case_collision", names=", ".join(group)[:MAX_TARGET], loader=loader)


def _lfs_head(path: str, size: int) -> bytes:
    """Open the file (raising if that is refused) and return the start a Git LFS pointer would have. A bare
    descriptor: a Python file object costs five times as much, on every file of the scan."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        return os.read(fd, len(LFS_POINTER_PREFIX)) if size < 1024 else b""
    finally:
        os.close(fd)


def _entry(path: Path, root: Path, display: str | None = None) -> Iterator[FileEntry | Observation]:
    where = str(path)  # system calls take the string: converting once saves a conversion per call
    display = display_path(path) if display is None else display
    try:
        info = os.lstat(where)
        if stat.S_ISLNK(info.st_mode):
            resolved = resolve(path, root)
            if resolved is None:
                yield _skip(display, "file.symlink_network", target=os.readlink(path)[:MAX_TARGET])
                return
            target = Path(resolved)
            if not os.path.exists(path):
                yield _skip(display, "file.broken_symlink", target=os.readlink(path))
                return
            if not _stays_inside(path, target, root):
                code = path.name.endswith(CODE_SUFFIXES) or target.name.endswith(CODE_SUFFIXES)
                weights = not code and (path.name.lower().endswith(WEIGHT_SUFFIXES) or loader_file(path.name)
                                        or path.parent.name in LOADER_FOLDERS
                                        or not ASSET_FOLDERS.isdisjoint(Path(display).parts[:-1]))
                yield _skip(display, "file.symlink_escape", target=target.as_posix(), code=code, weights=weights)
                return
            info = os.stat(path)
    except OSError as exc:
        yield _skip(display, "file.unreadable", reason=exc.strerror or str(exc))
        return
    if not stat.S_ISREG(info.st_mode):
        yield _skip(display, "file.special", mode=oct(stat.S_IFMT(info.st_mode)))
        return
    if info.st_size == 0:
        yield _skip(display, "file.empty")
        return
    try:  # every file is opened here, so one that cannot be is reported as unreadable, not as damaged
        head = _lfs_head(where, info.st_size)
    except OSError as exc:
        yield _skip(display, "file.unreadable", reason=exc.strerror or str(exc))
        return
    # A Git LFS pointer is a few lines of text; git keeps none in its own folder (a hook that looked like one ran,
    # its first line failing, helper 241).
    if head == LFS_POINTER_PREFIX and not (path.name == GIT_FOLDER or is_git_folder(path.parent)):
        yield _skip(display, "file.lfs_pointer")
        return
    yield FileEntry(path, display, info.st_size)
