"""Python files shipped with a model: the custom code `trust_remote_code=True` imports.

The file is parsed with `ast` (which builds a tree and runs nothing) and every import and call is resolved
through the file's own aliases (`import subprocess as sp`, `from os import system`, `x = os.popen`,
`getattr(os, "system")`). Custom code is listed for review; code that reaches for processes, the network,
native libraries, dynamic code, deserialisation, files outside the model, or encoded blobs is named with
the line that does it.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wscan.lookup import is_file
from wscan.model import AttrValue
from wscan.module_shadowing import MAX_LISTING, MAX_PARENT_LEVELS, is_weights, shadowed_module, shadows
from wscan.module_shadowing import listing as _listing
from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem

MAX_SOURCE_BYTES = 8 * 1024 * 1024  # custom modelling files are a few hundred KiB at most
MIN_BLOB_CHARS = 512  # an encoded literal this long is data smuggled in code, not a constant
MAX_FINDINGS = 100
MAX_NAME_PARTS = 64  # of a dotted name: real ones have a handful
WALK_DEPTH = 50_000  # frames the walk may take, for any tree the parser builds (it refuses about 3,000 terms)

# Module or callable prefix -> category. A name matches when it equals a key or starts with key + ".".
CATEGORIES: dict[str, str] = {
    **dict.fromkeys(
        ["os.system", "os.popen", "os.execl", "os.execle", "os.execlp", "os.execlpe", "os.execv", "os.execve",
         "os.execvp", "os.execvpe", "os.spawnl", "os.spawnle", "os.spawnlp", "os.spawnlpe", "os.spawnv",
         "os.spawnve", "os.spawnvp", "os.spawnvpe", "os.posix_spawn", "os.posix_spawnp", "os.fork",
         "os.forkpty", "os.startfile", "subprocess", "pty", "commands", "popen2", "platform.popen",
         "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "asyncio.subprocess"],
        "process",
    ),
    **dict.fromkeys(
        ["socket", "urllib.request", "urllib.urlopen", "urllib2", "http.client", "httplib", "requests", "httpx",
         "aiohttp", "urllib3", "ftplib", "smtplib", "telnetlib", "paramiko", "websocket", "websockets",
         "xmlrpc", "pycurl"],
        "network",
    ),
    **dict.fromkeys(["ctypes", "cffi", "_ctypes"], "native"),
    **dict.fromkeys(
        ["builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__", "importlib.import_module",
         "importlib.__import__", "runpy", "types.FunctionType", "types.CodeType", "marshal.loads",
         "marshal.load", "code.InteractiveInterpreter", "code.interact", "builtins.execfile"],
        "dynamic-code",
    ),
    **dict.fromkeys(
        ["pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle", "cPickle", "dill", "cloudpickle",
         "shelve.open", "joblib.load", "jsonpickle"],
        "deserialization",
    ),
    **dict.fromkeys(
        ["os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames", "os.replace",
         "os.chmod", "os.chown", "os.truncate", "os.symlink", "os.link", "shutil.rmtree", "shutil.move",
         "shutil.chown", "os.putenv", "os.setuid", "os.setgid"],
        "filesystem",
    ),
}
# os's functions are posix's (nt's on Windows), which a review called directly to pass as harmless code.
CATEGORIES.update({f"{native}.{name[3:]}": category for name, category in list(CATEGORIES.items())
                   if name.startswith("os.") for native in ("posix", "nt")})  # fmt: skip
CATEGORIES.update(dict.fromkeys(["_posixsubprocess", "multiprocessing.util.spawnv_passfds"], "process"))
# Modules whose mere import in model code reaches outside the model (os and shutil are too common for that).
IMPORT_CATEGORIES = ("subprocess", "pty", "socket", "ctypes", "cffi", "requests", "httpx", "urllib.request",
                     "http.client", "paramiko", "marshal", "ftplib", "telnetlib", "smtplib", "runpy")
DECODERS = frozenset({"base64.b64decode", "base64.b32decode", "base64.b16decode", "base64.a85decode",
                      "base64.b85decode", "base64.decodebytes", "base64.standard_b64decode",
                      "base64.urlsafe_b64decode", "binascii.a2b_base64", "binascii.unhexlify", "bytes.fromhex",
                      "codecs.decode", "zlib.decompress", "bz2.decompress", "lzma.decompress", "gzip.decompress",
                      "marshal.loads"})
# A path opened by model code that is not inside the model: absolute, in a home folder, or climbing out.
OUTSIDE_PATH = re.compile(r"^(~|/|[A-Za-z]:[\\/]|\\\\)|(^|[\\/])\.\.([\\/]|$)")
# Literals naming credentials or system files, wherever they appear in the code.
SENSITIVE_LITERAL = re.compile(
    r"(^|/)\.ssh/|(^|/)\.aws/|\.bash(rc|_history)\b|(^|/)\.netrc\b|\.git-credentials|\.huggingface/token|"
    r"\.cache/huggingface/token|^/etc/(passwd|shadow|sudoers)|^/proc/self/|id_rsa|\.kube/config"
)
_BLOB = re.compile(r"^[A-Za-z0-9+/=\s]+$|^[0-9a-fA-F\s]+$")
# Files that make a folder a model: transformers, peft and sentence-transformers configs.
# Files that mark a model's folder, by the loaders that import code from it: transformers, PEFT,
# sentence-transformers, MLflow (`MLmodel`: models from code, loader_module with `code:`), diffusers
# (model_index.json: pipeline and component modules beside it) and SpeechBrain (hyperparams.yaml: custom.py).
_MODEL_FILES = frozenset({
    "config.json", "tokenizer_config.json", "adapter_config.json", "modules.json", "config_sentence_transformers.json",
    "MLmodel", "model_index.json", "modular_model_index.json", "hyperparams.yaml", "configuration.json",
})  # fmt: skip
# The folder transformers' from_pretrained imports `generate.py` from, with or without trust_remote_code.
CUSTOM_GENERATE = "custom_generate"


# Categories from the most to the least severe, for a star import that brings several.
SEVERITY_ORDER = ["process", "dynamic-code", "deserialization", "native", "network", "filesystem"]
# Modules other modules import and so hand out as attributes: `shutil.os.system`, `tempfile._os.system` is os.system.
WALKED_INTO = frozenset({"os", "posix", "nt", "subprocess", "builtins", "pty", "ctypes", "socket", "importlib",
                         "marshal", "pickle", "runpy", "shutil", "sys"})
# Names standard modules import those under (enum's `import builtins as bltns`: review 10).
WALK_ALIASES = {"bltns": "builtins", "_builtins": "builtins", "__builtin__": "builtins", "_subprocess": "subprocess"}


def category_of(name: str) -> str | None:
    """The category of a fully qualified callable or module name, None when it is harmless; a name that walks
    into a module another one imports is that module's (`shutil.os.system` is `os.system`)."""
    parts = name.split(".")[:MAX_NAME_PARTS]

    def module_at(start: int) -> str:
        return WALK_ALIASES.get(parts[start], parts[start].lstrip("_"))

    starts = [0, *(start for start in range(1, len(parts) - 1) if module_at(start) in WALKED_INTO)]
    for start in starts:  # each walk checked once, without recursion (review 10: `shutil.os.os.os...` took minutes)
        walked = [module_at(start) if start else parts[0], *parts[start + 1:]]
        for end in range(len(walked), 0, -1):
            category = CATEGORIES.get(".".join(walked[:end]))
            if category is not None:
                return category
    return None


@dataclass
class _Hit:
    category: str
    callee: str
    line: int
    detail: str = ""


@dataclass
class _Resolver(ast.NodeVisitor):
    """Walks one module, mapping local names to what they import, and records every risky use."""

    aliases: dict[str, str] = field(default_factory=dict)
    hits: list[_Hit] = field(default_factory=list)

    def qualify(self, node: ast.expr) -> str | None:
        """`sp.run` -> `subprocess.run`, `getattr(os, "system")` -> `os.system`, builtins by name."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return f"builtins.{node.id}" if node.id in _BUILTIN_NAMES else None
        if isinstance(node, ast.Attribute):
            base = self.qualify(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.qualify(node.args[0])
            return f"{base}.{node.args[1].value}" if base is not None else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return _constant_str(node.args[0]) if node.args else None  # __import__("os").system
        if isinstance(node, ast.Subscript):  # sys.modules["os"].system (red team), x.__builtins__["exec"] (review 10)
            return self._from_table(node.value, node.slice)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and node.args):  # sys.modules.get("os") (review 10)
            return self._from_table(node.func.value, node.args[0])
        return None

    def _from_table(self, table_node: ast.expr, key_node: ast.expr) -> str | None:
        """What `table[key]` names when the table is the interpreter's list of modules or a module's builtins."""
        table, key = self.qualify(table_node), _constant_str(key_node)
        if table is None or key is None:
            return None
        parts = table.split(".")
        if parts[-2:] == ["sys", "modules"]:
            return key
        return f"builtins.{key}" if parts[-1] == "__builtins__" else None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
            self._imported(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module is None or node.level:
            return  # relative imports stay inside the model's own code
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if alias.name == "*":
                self._imported(node.module, node.lineno)
                if node.module == "builtins":
                    continue  # the names every module has (the `future` package's Python 2 shims do this)
                # Every name of the module, bound unseen: `from os import *` then `system(...)` (red team)
                members = sorted({category for key, category in CATEGORIES.items()
                                  if key == node.module or key.startswith(node.module + ".")})
                if members:
                    self.hits.append(_Hit(min(members, key=SEVERITY_ORDER.index), f"{node.module}.*", node.lineno,
                                          "every name imported"))
                continue
            self.aliases[alias.asname or alias.name] = full
            self._imported(full, node.lineno)

    def _imported(self, name: str, line: int) -> None:
        if any(name == m or name.startswith(m + ".") for m in IMPORT_CATEGORIES):
            category = category_of(name) or "dynamic-code"
            self.hits.append(_Hit(category, name, line, "imported"))

    def visit_Assign(self, node: ast.Assign) -> None:
        target = self.qualify(node.value)
        if target is not None and category_of(target) is not None:
            for name in node.targets:
                if isinstance(name, ast.Name):
                    self.aliases[name.id] = target
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualify(node.func)
        if name is not None:
            self._call(name, node)
        self.generic_visit(node)

    def _call(self, name: str, node: ast.Call) -> None:
        category = category_of(name)
        if name == "builtins.open" or name in ("io.open", "pathlib.Path", "os.open"):
            path = _constant_str(node.args[0]) if node.args else None
            if path is not None and OUTSIDE_PATH.search(path):
                self.hits.append(_Hit("filesystem", name, node.lineno, path[:80]))
            return
        if name in ("importlib.import_module", "importlib.__import__", "builtins.__import__") and node.args:
            module = _constant_str(node.args[0])
            if module is not None and category_of(module) is None and module not in IMPORT_CATEGORIES:
                return  # import_module("flash_attn"): an ordinary import spelled as a call
        if category is not None:
            obfuscated = category == "dynamic-code" and any(self._decodes(arg) for arg in node.args)
            self.hits.append(_Hit(category, name, node.lineno, "runs decoded data" if obfuscated else ""))

    def _decodes(self, node: ast.expr) -> bool:
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and self.qualify(child.func) in DECODERS:
                return True
            if isinstance(child, ast.Constant) and _is_blob(child.value):
                return True
        return False

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str | bytes) and _is_blob(node.value):
            self.hits.append(_Hit("obfuscation", "encoded literal", node.lineno, f"{len(node.value)} characters"))
        elif isinstance(node.value, str) and len(node.value) < 256 and SENSITIVE_LITERAL.search(node.value):
            self.hits.append(_Hit("filesystem", "path literal", node.lineno, node.value[:80]))


_BUILTIN_NAMES = frozenset({"exec", "eval", "compile", "__import__", "open", "execfile", "breakpoint"})


def _constant_str(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_blob(value: object) -> bool:
    """A long literal of base64 or hex characters: a payload carried inside the code."""
    if not isinstance(value, str | bytes) or len(value) < MIN_BLOB_CHARS:
        return False
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    return _BLOB.match(text) is not None and " " not in text.strip()[:MIN_BLOB_CHARS]


def _model_root(path: Path) -> Path | None:
    """The nearest folder at or above the file's own that holds a model config, looking at most
    MAX_PARENT_LEVELS up and never past a repository's top (`.git`, a Hugging Face snapshot): a stray config
    higher up is not this code's model. Weights mark only the file's own folder, for the same reason."""
    folder = path.absolute().parent  # a relative path's parents end at the working folder
    below = ""  # the folder just below `folder` on the way to the file
    for level in range(MAX_PARENT_LEVELS + 1):
        names = _listing(folder)
        if names is None:
            return folder if level == 0 else None  # an unlistable folder of its own: fail closed
        # A listing cut at MAX_LISTING entries is completed by looking the configs up by name: a config.json past
        # 20,000 other files once made a folder's code not model code (helper 208).
        cut = len(names) >= MAX_LISTING
        if any(n in _MODEL_FILES for n in names) or (cut and any(is_file(folder / n) for n in _MODEL_FILES)):
            return folder
        weights = any(is_weights(n) for n in names)
        if weights and (level == 0 or shadows(below)):
            return folder  # beside the weights, or in a package there named like a module their loaders import
        if ".git" in names or folder.parent.name == "snapshots" or folder.parent == folder:
            return None
        below = folder.name
        folder = folder.parent
    return None


def shadowed_by(artifact: Artifact) -> str:
    """The library a file would be imported in place of (module_shadowing), "" inside an archive: Python imports only
    from folders on disk."""
    return "" if artifact.real_path is None else shadowed_module(artifact.real_path)


def in_model_folder(artifact: Artifact) -> bool:
    """Inside an archive, or in a folder of a model (beside its weights or config, or below its config): code a
    loader may import."""
    return artifact.real_path is None or _model_root(artifact.real_path) is not None


def custom_generate(artifact: Artifact) -> bool:
    """Code under a model's `custom_generate/`: transformers imports custom_generate/generate.py (and what it
    imports beside it) from a local model folder even with trust_remote_code=False."""
    if artifact.real_path is None:
        parts = artifact.name.replace("\\", "/").split("/")[:-1]
        return CUSTOM_GENERATE in parts
    folder = artifact.real_path.absolute().parent
    for _ in range(MAX_PARENT_LEVELS):
        if folder.name == CUSTOM_GENERATE and is_file(folder.parent / "config.json"):
            return True
        if folder.parent == folder:
            break
        folder = folder.parent
    return False


class PythonCodeScanner:
    """`.py` files in a model's folders, read with `ast`, never imported."""

    name = "python"

    def accepts(self, head: Head) -> bool:
        # TorchScript archives store their compiled code as .py members: the torchscript scanner reads those.
        return (not head.raw_data and head.container != "torchscript" and head.name.endswith(".py")
                and b"\x00" not in head.head)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        shadows = shadowed_by(artifact)
        if not shadows and not in_model_folder(artifact):
            return
        generate = custom_generate(artifact)
        if artifact.size > MAX_SOURCE_BYTES:  # code a loader may import, unread: as bad as code that runs (red team)
            if generate:
                yield artifact.observe("code.custom_generate", lines=0)
            yield artifact.observe("code.size_limit", size=artifact.size, limit=MAX_SOURCE_BYTES,
                                   reason=f"{artifact.size} bytes, over the {MAX_SOURCE_BYTES}-byte limit for source")
            return
        with artifact.opener() as raw:
            source = raw.read(MAX_SOURCE_BYTES + 1)
        lines = source.count(b"\n") + 1
        yield artifact.observe("code.python", lines=lines, shadows=shadows)
        if generate:
            yield artifact.observe("code.custom_generate", lines=lines)
        try:
            # A fixed name: Python prints SyntaxWarnings headed by the file name, which a hostile member name
            # could turn into workflow commands in a CI log (warnings are also off during a scan).
            tree = ast.parse(source, filename="<model code>")
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
            yield artifact.observe("code.malformed", reason=f"{type(exc).__name__}: {exc}"[:200])
            return
        except (RecursionError, MemoryError):  # Python run with a higher recursion limit still imports it (review 10)
            yield artifact.observe("code.unchecked", reason="nested too deeply to parse")
            return
        resolver = _Resolver()
        # What the parser took, Python imports: a 700-term sum is 2,000 frames deep for the walk (red team). Frames
        # of Python code take no C stack in 3.11 and later.
        depth = sys.getrecursionlimit()
        sys.setrecursionlimit(max(depth, WALK_DEPTH))
        walked = True
        try:
            resolver.visit(tree)
        except RecursionError:
            walked = False
        finally:
            sys.setrecursionlimit(depth)
        if not walked:
            yield artifact.observe("code.unchecked", reason="nested too deeply to walk")
        seen: set[tuple[str, str]] = set()
        counts: Counter[str] = Counter()
        for hit in resolver.hits:
            # One finding per callable and one per line: `open("/etc/passwd")` is one finding, not two. Capped per
            # category, not in all: a hundred medium hits once hid an `os.system` after them (helper 208).
            keys = {(hit.category, hit.callee), (hit.category, str(hit.line))}
            if keys & seen or counts[hit.category] >= MAX_FINDINGS:
                continue
            seen |= keys
            counts[hit.category] += 1
            attrs: dict[str, AttrValue] = {"category": hit.category, "callee": hit.callee, "line": hit.line,
                                           "detail": hit.detail}
            yield artifact.observe(f"code.{hit.category.replace('-', '_')}", **attrs)
