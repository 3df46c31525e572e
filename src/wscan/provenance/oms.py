"""The OMS signature format, through the reference library `model_signing` (and `sigstore` beneath it).

wscan writes no cryptography and no bundle format of its own: a signature made here is the one
`model_signing sign` makes, byte for byte in layout, and verifies with it, and the reverse. The one thing
taken further is reporting: instead of one "signature mismatch" error, the signed manifest is compared with
the folder file by file (see `diff`). That needs the manifest the signature vouches for, which the library
computes inside `verifying.Config.verify`; `signed_manifest` reaches it through the configured verifier,
so this module is pinned to model-signing 1.1.x and tested against real signatures from its authors.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from wscan.lookup import walk

DEFAULT_SIGNATURE = "model.sig"
T = TypeVar("T")


@dataclass(frozen=True)
class KeyMethod:
    """A local elliptic-curve key (PEM): private to sign, public to verify."""

    key: Path
    password: bytes | None = None


@dataclass(frozen=True)
class CertificateMethod:
    """An x509 signing certificate and its chain; verification trusts the given chain (root last or first)."""

    chain: tuple[Path, ...]
    private_key: Path | None = None
    signing_certificate: Path | None = None


@dataclass(frozen=True)
class KeylessMethod:
    """Sigstore keyless: an OIDC identity certified by Fulcio, logged in Rekor."""

    identity: str | None = None  # verify: expected certificate identity
    issuer: str | None = None  # verify: expected OIDC issuer; sign: issuer to ask for a token
    identity_token: str | None = None  # sign: a token already obtained
    trust_config: Path | None = None  # a ClientTrustConfig for a private Sigstore deployment
    ambient: bool = True  # sign: use ambient CI credentials (GitHub Actions) when present


Method = KeyMethod | CertificateMethod | KeylessMethod


class SignatureProblem(Exception):
    """Verification failed before any file was compared; `kind` says how (an observation kind)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class Resource:
    """One signed file (or shard of a file) and its digest."""

    identifier: str  # path relative to the model, or "path:start:end" for shards
    algorithm: str
    digest: str


@dataclass(frozen=True)
class SignedManifest:
    """What a signature vouches for."""

    resources: tuple[Resource, ...]
    serialization: dict[str, Any]
    leaf: str = ""  # x509: the verified signing certificate, in words (the CA alone does not say who signed)


def hashing_config(
    model_dir: Path, ignore: Iterable[Path], shard_size: int | None = None, own: Iterable[Path] = ()
) -> Any:
    """The library's hashing configuration: sha256 per file (or per `shard_size` bytes), git files ignored.

    `ignore` are the user's paths (refused when they cover the folder or leave it, see `ignored_names`), `own`
    the signature or attestation files (left out when inside the folder). Files are hashed in parallel by the
    library's thread pool, 1 MiB at a time (bounded memory); shards let one large file use every core too, at
    the price of a longer manifest.
    """
    from model_signing import hashing

    config = hashing.Config()  # type: ignore[no-untyped-call]
    if shard_size is not None:
        config.use_shard_serialization(shard_size=shard_size)
    names = ignored_names(model_dir, ignore, own)
    return config.set_ignored_paths(paths=[Path(n) for n in names], ignore_git_paths=True)


def ignored_names(model_dir: Path, ignore: Iterable[Path], own: Iterable[Path] = ()) -> list[PurePosixPath]:
    """Ignore paths relative to the model folder, as the library records them (it joins each to the folder
    itself: a path already joined would be joined twice). A relative user path is taken inside the folder.

    Raises ValueError for a user path that is the folder itself (`""` and `.` parse as it) or lies outside:
    a signature of nothing verifies any folder. An `own` file outside the folder is simply not in it.
    """
    if not model_dir.is_dir():
        return []  # a one-file model: the library ignores nothing
    names = []
    for path in ignore:
        name = _inside(model_dir, path)
        if name is None or name == PurePosixPath("."):
            where = "is the model folder itself" if name is not None else "lies outside the model folder"
            raise ValueError(f"--ignore-paths {path.as_posix()!r} {where}: the signature would not cover "
                             "the model (an empty value parses as '.')")
        names.append(name)
    for path in own:
        name = _inside(model_dir, Path(os.path.abspath(path)))
        if name is not None and name != PurePosixPath("."):
            names.append(name)
    return names


def _inside(model_dir: Path, path: Path) -> PurePosixPath | None:
    """`path` (absolute, or relative to `model_dir`) relative to `model_dir` by name, or None when outside."""
    base = os.path.abspath(model_dir)
    name = os.path.relpath(os.path.abspath(os.path.join(base, path)), base)
    if name == ".." or name.startswith(".." + os.sep):
        return None
    return PurePosixPath(Path(name).as_posix())


def sign(
    model_dir: Path, signature: Path, ignore: Sequence[Path], method: Method, shard_size: int | None = None
) -> None:
    """Write an OMS signature of every file under `model_dir` (the signature file itself excluded).

    A folder with no file left to sign is refused (that signature would verify any folder), and so, with
    `shard_size`, is an empty file: the OMS `shards` method records no shard for it, so the signature could not
    cover it and verification could not tell it from one added later."""
    from model_signing import signing

    hashing = hashing_config(model_dir, ignore, shard_size, own=[signature])
    if model_dir.is_dir():
        _check_coverage(model_dir, ignored_names(model_dir, ignore, [signature]), shard_size)
    config = signing.Config().set_hashing_config(hashing)  # type: ignore[no-untyped-call]
    if isinstance(method, KeyMethod):
        # model_signing hands the password to cryptography, which wants bytes (its hint says str).
        config.use_elliptic_key_signer(private_key=method.key, password=method.password)  # type: ignore[arg-type]
    elif isinstance(method, CertificateMethod):
        if method.private_key is None or method.signing_certificate is None:
            raise ValueError("certificate signing needs a private key and a signing certificate")
        config.use_certificate_signer(
            private_key=method.private_key,
            signing_certificate=method.signing_certificate,
            certificate_chain=method.chain,
        )
    else:
        config.use_sigstore_signer(
            oidc_issuer=method.issuer,
            use_ambient_credentials=method.ambient and method.identity_token is None,
            identity_token=method.identity_token,
            trust_config=method.trust_config,
        )
    config.sign(model_dir, signature)


GIT_PATHS = (".git", ".gitattributes", ".github", ".gitignore")  # what model_signing leaves out
MAX_SHARDS = 100_000  # shards a signature may make of its folder (verification runs a task per shard)


def _check_coverage(model_dir: Path, ignored: Sequence[PurePosixPath], shard_size: int | None) -> None:
    """Refuse a signature that would cover no file, or (sharded) one that would miss an empty file."""
    files = _files_to_sign(model_dir, ignored)
    if not files:
        raise ValueError(f"nothing to sign: no regular file in {model_dir} is left once the ignore paths, git "
                         "files and the signature are left out")
    if shard_size is not None:
        shards = sum(-(-size // shard_size) for _, size in files)
        if shards > MAX_SHARDS:
            raise ValueError(f"--shard-size {shard_size} makes {shards:,} shards of this folder, more than "
                             f"{MAX_SHARDS:,}: verifying it would take a task per shard")
    empty = [name for name, size in files if size == 0]
    if shard_size is not None and empty:
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        raise ValueError(f"--shard-size cannot cover empty files ({shown}): the shards method records no "
                         "shard for them; sign per file, or leave them out with --ignore-paths")


def _files_to_sign(model_dir: Path, ignore: Iterable[PurePosixPath]) -> list[tuple[str, int]]:
    """(relative name, size) of the regular files a signature would take in; links are not followed."""
    ignored = [*(PurePosixPath(p) for p in GIT_PATHS), *ignore]
    files = []
    for folder in walk(model_dir):
        for name in (entry.name for entry in folder.entries if entry.name not in folder.folders):
            path = folder.path / name
            rel = PurePosixPath(path.relative_to(model_dir).as_posix())
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and not any(rel.is_relative_to(i) for i in ignored):
                    files.append((rel.as_posix(), info.st_size))
    return sorted(files)


def _verifier_config(method: Method) -> Any:
    from model_signing import verifying

    config = verifying.Config()  # type: ignore[no-untyped-call]
    if isinstance(method, KeyMethod):
        return config.use_elliptic_key_verifier(public_key=method.key)
    if isinstance(method, CertificateMethod):
        return config.use_certificate_verifier(certificate_chain=method.chain)
    if method.identity is None or method.issuer is None:
        raise ValueError("keyless verification needs the expected identity and issuer")
    return config.use_sigstore_verifier(
        identity=method.identity, oidc_issuer=method.issuer, trust_config=method.trust_config
    )


def signed_manifest(signature: Path, method: Method) -> tuple[SignedManifest, Any]:
    """The manifest the signature vouches for, after checking the signature, and the hashing config it implies.

    Raises SignatureProblem: `provenance.signature_unreadable` (missing or not a bundle),
    `provenance.wrong_signer` (valid signature, other identity, issuer or untrusted chain) or
    `provenance.signature_invalid` (the signature or its payload does not verify).
    """
    bundle = read_bundle(signature, method)
    verifier = verifier_for(method)
    expected = run_verifier(method, lambda: verifier.verify(bundle))  # the library's check of signature and payload
    resources = tuple(
        Resource(rd.identifier, rd.digest.algorithm, rd.digest.digest_hex) for rd in expected.resource_descriptors()
    )
    serialization = dict(expected.serialization_type)
    leaf = leaf_certificate(bundle) if isinstance(method, CertificateMethod) else ""
    return SignedManifest(resources, serialization, leaf), hashing_for(serialization)


def leaf_certificate(bundle: Any) -> str:
    """The signing certificate of a verified x509 bundle: subject, serial and validity (not checked by the
    library, which validates the chain at the leaf's own notBefore), or "" when it cannot be read."""
    from cryptography import x509

    try:
        raw = bundle.bundle.verification_material.x509_certificate_chain.certificates[0].raw_bytes
        leaf = x509.load_der_x509_certificate(raw)
        return (f"{leaf.subject.rfc4514_string()[:200]}, serial {leaf.serial_number:x}, valid "
                f"{leaf.not_valid_before_utc:%Y-%m-%d} to {leaf.not_valid_after_utc:%Y-%m-%d}")
    except Exception:  # a display detail: the signature itself is already verified
        return ""


MAX_BUNDLE_BYTES = 16 * 1024 * 1024  # a real bundle is a few KB (a keyless one with its chain, ~10 KB)


def read_bundle(path: Path, method: Method) -> Any:
    """The Sigstore bundle in `path`, in the library's class for this method; unreadable is a SignatureProblem."""
    from model_signing._signing import sign_sigstore, sign_sigstore_pb

    reader = sign_sigstore.Signature if isinstance(method, KeylessMethod) else sign_sigstore_pb.Signature
    text = read_small(path)
    try:
        return reader.read(_Text(text))  # type: ignore[arg-type]  # it only calls read_text
    except Exception as exc:  # JSON, protobuf or sigstore model errors: not a bundle
        raise SignatureProblem("provenance.signature_unreadable", _short(exc)) from None


def read_small(path: Path, limit: int = MAX_BUNDLE_BYTES) -> str:
    """A signature or attestation file's text, read without following a link, blocking on a FIFO or reading a
    device or a huge (sparse) file whole: the library's `read_text` hung on a FIFO and filled memory from
    /dev/zero (review 31). Anything but a regular file of at most `limit` bytes is a SignatureProblem."""
    def problem(reason: str) -> SignatureProblem:
        return SignatureProblem("provenance.signature_unreadable", f"{path.name} {reason}")

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise problem("is a symbolic link: not read") from None
        raise problem(f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise problem(f"is a {_kind(info.st_mode)}, not a regular file: not read")
        if info.st_size > limit:
            raise problem(f"holds {info.st_size} bytes, more than a bundle's {limit}: not read")
        with os.fdopen(os.dup(fd), "rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise problem(f"cannot be read: {exc.strerror or type(exc).__name__}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise problem(f"grew past a bundle's {limit} bytes while read: not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SignatureProblem("provenance.signature_unreadable", _short(exc)) from None


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
             (stat.S_ISBLK, "block device"), (stat.S_ISDIR, "folder"))
    return next((kind for test, kind in kinds if test(mode)), "special file")


@dataclass(frozen=True)
class _Text:
    """Already-read bundle text in the one shape the library's `Signature.read` uses (`path.read_text`)."""

    text: str

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.text


def verifier_for(method: Method) -> Any:
    """The library's verifier for a key, a certificate chain, or a keyless identity and issuer."""
    return _verifier_config(method)._verifier


def run_verifier(method: Method, check: Callable[[], T]) -> T:
    """Run one of the library's checks; its failures become SignatureProblems (invalid, or wrong signer)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the library prints warnings to stdout: keep JSON clean
            return check()
    except Exception as exc:
        raise SignatureProblem(_classify(exc, method), _short(exc)) from None


HASH_TYPES = ("sha256", "blake2", "blake3")  # what model_signing 1.1 can hash with


def hashing_for(serialization: dict[str, Any]) -> Any:
    """The hashing configuration a signed `serialization` block describes (as model_signing reads it back).

    A block the library cannot hash with (unknown method or algorithm, a shard size that is not a positive
    integer: 60.5 would be read as 60) is a SignatureProblem, not a traceback: the signer made it."""
    from model_signing import hashing

    method = serialization.get("method")
    algorithm = serialization.get("hash_type", "sha256")
    if algorithm not in HASH_TYPES:
        raise SignatureProblem("provenance.signature_invalid", f"unsupported hash_type {str(algorithm)[:40]!r}")
    ignore_paths = serialization.get("ignore_paths", [])
    common = {
        "hashing_algorithm": algorithm,
        "allow_symlinks": bool(serialization.get("allow_symlinks", False)),
        "ignore_paths": [str(p) for p in ignore_paths] if isinstance(ignore_paths, list) else [],
    }
    config = hashing.Config()  # type: ignore[no-untyped-call]
    if method == "files":
        return config.use_file_serialization(**common)
    if method == "shards":
        size = serialization.get("shard_size")
        if (isinstance(size, bool) or not isinstance(size, int | float) or not math.isfinite(size)
                or size != int(size) or size < 1):
            raise SignatureProblem("provenance.signature_invalid", f"shard_size {str(size)[:40]!r} is not a "
                                   "positive integer")
        return config.use_shard_serialization(shard_size=int(size), **common)
    raise SignatureProblem("provenance.signature_invalid", f"unknown serialization method {str(method)[:40]!r}")


def hash_model(model_dir: Path, config: Any, ignore: Iterable[str], files: Sequence[Path]) -> list[Resource]:
    """The folder hashed as the signature's own settings say (same serialization, algorithm and ignores).

    `files` are the regular files to consider (symbolic links already taken out and reported by the caller:
    the library refuses a folder that holds any).
    """
    config.add_ignored_paths(model_path=model_dir, paths=list(ignore))
    actual = config.hash(model_dir, files_to_hash=list(files))
    return [Resource(rd.identifier, rd.digest.algorithm, rd.digest.digest_hex) for rd in actual.resource_descriptors()]


_SIGNER_WORDS = ("identity", "issuer", "san", "subject", "certificate chain", "untrusted", "trust", "policy",
                 "expected", "unknown issuer", "self-signed")


def _classify(exc: Exception, method: Method) -> str:
    """Wrong signer when the signature is sound but vouches for someone else; otherwise invalid."""
    text = f"{type(exc).__name__} {exc}".lower()
    if isinstance(method, KeylessMethod | CertificateMethod) and any(word in text for word in _SIGNER_WORDS):
        return "provenance.wrong_signer"
    if isinstance(method, KeyMethod) and "key mismatch" in text:  # the bundle names another key's hash
        return "provenance.wrong_signer"
    return "provenance.signature_invalid"


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]
