"""A tiny DOM of an HTML page (stdlib parser) so tests can count elements and read text."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser

VOID = {"meta", "link", "br", "hr", "img", "input", "wbr", "source", "col", "area", "base"}


@dataclasses.dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node | str] = dataclasses.field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str = "", cls: str = "", **attrs: str) -> list[Node]:
        """Descendants with this tag, all these classes (space-separated) and attributes."""
        wanted = set(cls.split())
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if (
                (not tag or child.tag == tag)
                and wanted <= child.classes
                and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                found.append(child)
            found += child.find_all(tag, cls, **attrs)
        return found

    def find(self, tag: str = "", cls: str = "", **attrs: str) -> Node:
        found = self.find_all(tag, cls, **attrs)
        assert len(found) == 1, f"{len(found)} <{tag} class={cls!r} {attrs}> elements"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = _Builder()
    builder.feed(page)
    builder.close()
    return builder.root
