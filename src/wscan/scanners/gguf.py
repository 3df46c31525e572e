"""GGUF files (llama.cpp, Ollama, LM Studio): the header is checked field by field, tensor data is never read.

Loading a GGUF runs no code of its own, so the risks are in the parser and around it: lengths and counts
that make a C loader allocate or read out of bounds, layouts different readers see differently, bytes no
tensor claims (scanned here as their own blob, so a pickle hidden there gets its own finding), and the chat
template in the metadata, which inference servers render with Jinja (checked by `wscan.chat_template`).
Every check lives in `gguf_header`; this module turns its problems into observations.
"""

from __future__ import annotations

from collections.abc import Iterator

from wscan.scanners.base import Artifact, Head, ScanContext, ScanItem
from wscan.scanners.problems import problem_items

MAGIC = b"GGUF"  # gguf.constants.GGUF_MAGIC as stored (little-endian); the tests check they agree


class GgufScanner:
    """`.gguf` files, whatever their name."""

    name = "gguf"

    def accepts(self, head: Head) -> bool:
        return not head.raw_data and head.head.startswith(MAGIC)

    def scan(self, artifact: Artifact, ctx: ScanContext) -> Iterator[ScanItem]:
        # Imported here: the gguf package pulls in NumPy and Jinja is only needed for templates, so neither
        # slows down a scan that meets no GGUF file.
        from wscan.chat_template import MAX_TEMPLATE_CHARS
        from wscan.scanners.gguf_header import Caps, parse_gguf, summary
        from wscan.scanners.gguf_vocab import vocabulary_problems

        # Up to four UTF-8 bytes a character: anything longer is over the checker's limit however it decodes.
        caps = Caps(ctx.limits.max_header_bytes, ctx.limits.max_members, 4 * MAX_TEMPLATE_CHARS, ctx.budget.check_time)
        with artifact.opener() as raw:
            parsed = parse_gguf(raw, artifact.size, caps)
        # A vocabulary cut short by the limit would look broken: it is judged only when read to its end.
        vocabulary = vocabulary_problems(parsed) if parsed.over_budget is None else []
        yield from problem_items(artifact, parsed.problems + vocabulary)
        architecture = str(parsed.values.get("general.architecture", ""))
        for template in parsed.templates:
            yield from _template_observations(artifact, template.key, template.offset, template.length, template.text)
            if architecture and template.text is not None and architecture in template.text:
                # transformers rewrites every metadata string containing the architecture name (qwen3moe becomes
                # qwen3_moe): the template it renders is not the one stored. A name that hides a comment marker
                # turns stored text into code, so the rewritten forms are judged too.
                for rewritten in {template.text.replace(architecture, "_"), template.text.replace(architecture, "")}:
                    yield from _template_observations(
                        artifact, f"{template.key} (as rewritten)", template.offset, len(rewritten), rewritten
                    )
            for form, text in loader_forms(template.text, template.length).items():
                field = f"{template.key} ({form})"
                yield from _template_observations(artifact, field, template.offset, len(text), text)
        if parsed.over_budget is not None:  # a template read before the limit is judged all the same
            raise parsed.over_budget
        if parsed.complete:
            yield artifact.observe("fact.gguf", 0, **summary(parsed))


# llama-cpp-python reads a metadata value into a buffer of this many bytes and reads again only for a longer one,
# so a string of exactly this length loses its last byte (review 29: a template ending in `{{` rendered as `{`).
LCP_METADATA_BUFFER = 1024


def loader_forms(text: str | None, length: int) -> dict[str, str]:
    """The other texts loaders take a stored template for: llama.cpp keeps a value up to its first NUL (review
    29: a dangerous template before a NUL and a broken tail after it, which wscan had judged whole, as "does
    not parse"), llama-cpp-python also cuts a 1,024-byte one."""
    if text is None:
        return {}
    forms: dict[str, str] = {}
    if "\x00" in text:
        forms["up to its NUL, as llama.cpp reads it"] = text.split("\x00", 1)[0]
    if length == LCP_METADATA_BUFFER:
        cut = text.encode("utf-8", "replace")[: LCP_METADATA_BUFFER - 1].decode("utf-8", "ignore")
        forms["its first 1,023 bytes, as llama-cpp-python reads it"] = cut.split("\x00", 1)[0]
    return forms


def _template_observations(
    artifact: Artifact, key: str, offset: int, length: int, text: str | None
) -> Iterator[ScanItem]:
    """A chat template in the metadata, judged by the checker every format shares."""
    from wscan.chat_template import MAX_TEMPLATE_CHARS, check_template

    if text is None:  # too long to read: the checker would refuse it the same way
        yield artifact.observe("template.size_limit", offset, field=key, length=length, limit=MAX_TEMPLATE_CHARS)
        return
    for issue in check_template(text):
        yield artifact.observe(issue.kind, offset, **issue.attrs, field=key)
