"""Every relative link of the repository's Markdown pages reaches a file, and every #anchor a heading of it."""

import os
import re
import subprocess

from conftest import ROOT

# Rendered into results/ by `experiments.report`, so their links are relative to where they land.
TEMPLATES = "experiments/report/templates/"


def slug(heading: str) -> str:
  """GitHub's anchor of a heading: lower case, code marks and punctuation but "-" and "_" dropped, spaces to "-"."""
  return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def anchors(text: str) -> set:
  """The anchors of a page: its headings' slugs (a repeated one numbered -1, -2, ...) outside code blocks, and the
  names of its `<a name=...>` / `<a id=...>` tags."""
  out, seen, code = set(), {}, False
  for line in text.splitlines():
    if line.startswith("```"):
      code = not code
    if code:
      continue
    if heading := re.match(r"#{1,6}\s+(.*)$", line):
      s = slug(heading.group(1))
      out.add(s if s not in seen else f"{s}-{seen[s]}")
      seen[s] = seen.get(s, 0) + 1
    out.update(re.findall(r'<a (?:name|id)="([^"]+)"', line))
  return out


def broken_links(root: str, pages) -> list:
  """(page, link, why) of every relative link of `pages` (paths under `root`) that reaches no file or no anchor."""
  bad = []
  for page in pages:
    text = re.sub(r"```.*?```", "", open(os.path.join(root, page), encoding="utf-8").read(), flags=re.S)
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
      if re.match(r"[a-z]+:", link):  # https:, mailto:
        continue
      path, _, anchor = link.partition("#")
      target = os.path.normpath(os.path.join(root, os.path.dirname(page), path)) if path else os.path.join(root, page)
      if not os.path.exists(target):
        bad.append((page, link, "no such file"))
      elif anchor and target.endswith(".md") and anchor not in anchors(open(target, encoding="utf-8").read()):
        bad.append((page, link, "no such heading"))
  return bad


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
  (tmp_path / "a.md").write_text("# Top\n## A b's `c`\n[1](b.md#other) [2](#a-bs-c) [3](#top) [4](gone.md) "
                                 "[5](https://example.org)\n```\n# not a heading\n```\n")
  (tmp_path / "b.md").write_text("# B\n")
  assert broken_links(str(tmp_path), ["a.md"]) == [("a.md", "b.md#other", "no such heading"),
                                                   ("a.md", "gone.md", "no such file")]


def test_every_link_of_the_repositorys_pages_reaches_its_file_and_heading():
  tracked = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
  pages = [p for p in tracked.split() if not p.startswith(TEMPLATES)]
  assert "README.md" in pages and "docs/README.md" in pages
  assert broken_links(ROOT, pages) == []
