"""Chat templates (chat_template.py): Jinja parse and tree walk, and the chat_template.jinja file scanner."""

from __future__ import annotations

from _boot import fuzz, instrument

with instrument():
    import harness

    from wscan.chat_template import check_template
    from wscan.scanners.repo_files import TemplateFileScanner

SCANNERS = [TemplateFileScanner()]


def one_input(data: bytes) -> None:
    for issue in check_template(data.decode("utf-8", "surrogateescape")):
        for key, value in issue.attrs.items():
            if not isinstance(value, harness.ATTR_TYPES):
                raise harness.FuzzBug(f"{issue.kind}: attribute {key!r} is a {type(value).__name__}")
    harness.drive(SCANNERS, data, "chat_template.jinja")


if __name__ == "__main__":
    fuzz(one_input)
