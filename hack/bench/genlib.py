"""Helpers shared by the benchmark data generators (gen-*.py)."""

import os


def write(path, text):
    """Writes `text` to `path` through a temporary file and a rename, creating directories."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def indent(text, spaces):
    """`text` with every non-blank line indented by `spaces`."""
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(True))
