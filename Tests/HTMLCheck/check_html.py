"""Checks an HTML page with Python's own parser, independent of the code that wrote it.

usage: check_html.py FILE

Fails (exit 1, the problems on stderr) on an end tag that closes nothing open, an element left
open at the end, a <script>, or anything fetched from elsewhere (src=, href= other than an
in-page #anchor, url(...) or @import in CSS). Otherwise prints one JSON object on stdout: the
<title>, the <h2> texts, and how many elements have the class "event", by class.
"""
import json
import re
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.problems = []
        self.events = {}
        self.title = ""
        self.h2 = []
        self.text_target = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script":
            self.problems.append(f"line {self.getpos()[0]}: <script>")
        for name in ("src", "srcset", "data", "action"):
            if name in attributes:
                self.problems.append(f"line {self.getpos()[0]}: <{tag} {name}=...> fetches something")
        if "href" in attributes and not (attributes["href"] or "").startswith("#"):
            self.problems.append(f"line {self.getpos()[0]}: <{tag} href={attributes['href']!r}>")
        if re.search(r"url\(|@import", attributes.get("style") or ""):
            self.problems.append(f"line {self.getpos()[0]}: style fetches something")
        classes = (attributes.get("class") or "").split()
        if "event" in classes:
            for name in classes:
                self.events[name] = self.events.get(name, 0) + 1
        if tag not in VOID:
            self.stack.append((tag, self.getpos()[0]))
        if tag in ("title", "h2"):
            self.text_target = tag
            if tag == "h2":
                self.h2.append("")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            open_tag = self.stack[-1] if self.stack else None
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> closes nothing open (innermost open: {open_tag})")
            return
        self.stack.pop()
        if tag == self.text_target:
            self.text_target = None

    def handle_data(self, data):
        if self.text_target == "title":
            self.title += data
        elif self.text_target == "h2":
            self.h2[-1] += data
        if self.stack and self.stack[-1][0] == "style" and re.search(r"url\(|@import", data):
            self.problems.append(f"line {self.getpos()[0]}: CSS fetches something")


def main():
    with open(sys.argv[1], encoding="utf-8") as file:
        text = file.read()
    if not text.startswith("<!DOCTYPE html>"):
        print("no <!DOCTYPE html> first", file=sys.stderr)
        return 1
    checker = Checker()
    checker.feed(text)
    checker.close()
    problems = checker.problems + [f"<{tag}> opened on line {line} never closed" for tag, line in checker.stack]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(json.dumps({"title": checker.title, "h2": checker.h2, "events": checker.events}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
