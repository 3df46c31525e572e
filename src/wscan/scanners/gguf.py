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

        # Up to four UTF-8 bytes a character: anything longer is over the checker's limit however it decodes.
        caps = Caps(ctx.limits.max_header_bytes, ctx.limits.max_members, 4 * MAX_TEMPLATE_CHARS, ctx.budget.check_time)
        with artifact.opener() as raw:
            parsed = parse_gguf(raw, artifact.size, caps)
        yield from problem_items(artifact, parsed.problems)
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
        if parsed.complete:
            yield artifact.observe("fact.gguf", 0, **summary(parsed))


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
