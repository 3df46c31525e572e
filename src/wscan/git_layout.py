"""Where git keeps its own files: what discovery (links, LFS pointers) and the git-files scanner both ask.

Why one place: git reads a config and hooks in any folder it takes for a git folder, a `.git` and everything in it,
or a folder with a HEAD (a bare repository's layout, a HEAD link even when dangling); each reader that guessed on
its own missed a layout git uses (helpers 238, 239 and 241).
"""

from __future__ import annotations

import os
from pathlib import PurePath

GIT_FOLDER = ".git"


def is_git_folder(folder: PurePath, on_disk: bool = True) -> bool:
    """Whether git reads a config and hooks in `folder`: a `.git` folder or one inside it (a submodule's, a
    worktree's), or, on disk, a folder holding a HEAD (a file or a link, even dangling: git takes `refs/...`)."""
    return GIT_FOLDER in folder.parts or (on_disk and os.path.lexists(os.path.join(folder, "HEAD")))
