#!/usr/bin/python3
"""Fails when a relative link of the documentation does not resolve.

  links_test.py SOURCE_DIR

Every Markdown file of the documentation (README.md, BENCHMARKS.md, docs/, deploy/README.md,
clients/python/README.md, and the other *.md files under simulator/, examples/ and bench/) is
read; each relative link [text](path), [text](path#anchor) or [text](#anchor) outside code must
name an existing file or folder, and an #anchor into a Markdown file must be one of its
headings' GitHub anchors. Absolute URLs (http:, https:, mailto:) are not fetched. Each broken
link is printed as FILE:LINE: the link and what is wrong; the exit status is 1 when any is.
"""

import os
import re
import sys
import urllib.parse

# Files that must exist (a missing one fails, so the check cannot pass by reading nothing).
REQUIRED = ["README.md", "BENCHMARKS.md", "deploy/README.md", "clients/python/README.md",
            "docs/cli.md", "docs/development.md"]
# Folders whose *.md files are read as well (recursively).
FOLDERS = ["docs", "simulator", "examples", "bench"]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) or ![alt](target); the target stops at whitespace (a title may follow).
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def markdown_files(root):
    files = []
    for name in REQUIRED:
        files.append(name)
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if name.endswith(".md"):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(set(files))


def lines_outside_code(text):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def github_anchor(heading):
    """The anchor GitHub gives a heading's text (github-slugger's rules)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts as its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").replace("*", "")
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)  # punctuation goes; letters, digits, _ and - stay
    return text.replace(" ", "-")


def anchors_of(path, cache):
    if path not in cache:
        anchors, seen = set(), {}
        with open(path, encoding="utf-8") as handle:
            for _, line in lines_outside_code(handle.read()):
                match = HEADING.match(line)
                if not match:
                    continue
                anchor = github_anchor(match.group(2))
                if anchor in seen:  # GitHub numbers repeated headings: x, x-1, x-2, ...
                    seen[anchor] += 1
                    anchors.add(f"{anchor}-{seen[anchor]}")
                else:
                    seen[anchor] = 0
                    anchors.add(anchor)
        cache[path] = anchors
    return cache[path]


def check_file(root, name, cache):
    problems = []
    path = os.path.join(root, name)
    if not os.path.isfile(path):
        return [f"{name}: missing (the documentation must have this file)"]
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for number, line in lines_outside_code(text):
        line = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(line)]
        reference = REFERENCE.match(line)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # absolute URL (http:, https:, mailto:, ...)
            file_part, _, anchor = target.partition("#")
            file_part = urllib.parse.unquote(file_part)
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            where = f"{name}:{number}: ({target})"
            if not os.path.exists(resolved):
                problems.append(f"{where} {os.path.relpath(resolved, root)} does not exist")
                continue
            if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                if urllib.parse.unquote(anchor).lower() not in anchors_of(resolved, cache):
                    problems.append(f"{where} {os.path.relpath(resolved, root)} has no heading "
                                    f"with anchor #{anchor}")
    return problems


def main():
    if len(sys.argv) != 2:
        print("usage: links_test.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    cache, problems, files = {}, [], markdown_files(root)
    for name in files:
        problems += check_file(root, name, cache)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} broken relative link(s); fix the link or the heading it names")
        return 1
    print(f"every relative link of {len(files)} Markdown files resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
