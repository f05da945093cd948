"""An HTML document as a tree of elements (the standard library's HTMLParser; no dependency), to look at
report.html as a browser builds it: which elements exist, their attributes and their text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID_ELEMENTS = frozenset("area base br col embed hr img input link meta source track wbr".split())
"""Elements without content or end tag in HTML."""

RESOURCE_ATTRIBUTES = frozenset({"src", "href", "xlink:href", "srcset", "data", "poster", "action", "formaction",
                                 "background", "manifest", "ping", "codebase", "cite", "longdesc"})
"""Attributes whose value a browser may fetch (or navigate to)."""


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = field(default_factory=list)

    def iter(self, tag: str | None = None) -> Iterator[Element]:
        """This element and every element inside it (of `tag` only, when given), in document order."""
        if tag is None or self.tag == tag:
            yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter(tag)

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def find_id(self, element_id: str) -> Element:
        return next(element for element in self.iter() if element.attrs.get("id") == element_id)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self._open = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, dict(attrs))
        self._open[-1].children.append(element)
        if tag not in VOID_ELEMENTS:
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._open[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if any(element.tag == tag for element in self._open[1:]):
            while self._open.pop().tag != tag:
                pass

    def handle_data(self, data: str) -> None:
        self._open[-1].children.append(data)


def parse_html(text: str) -> Element:
    """The document's tree (its root is `#document`)."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def external_references(root: Element) -> list[str]:
    """Every reference in the document a browser could fetch: resource attributes' values other than the
    page's own `#` anchors, `url(...)` and `@import` in style attributes and <style> elements, and any
    <script>, <iframe>, <object>, <embed> or <base> element."""
    found = []
    for element in root.iter():
        if element.tag in ("script", "iframe", "object", "embed", "base", "frame"):
            found.append(f"<{element.tag}>")
        for name, value in element.attrs.items():
            if name in RESOURCE_ATTRIBUTES and value is not None and not value.startswith("#"):
                found.append(f"{element.tag} {name}={value}")
            if name == "style" and value and ("url(" in value.lower() or "@import" in value.lower()):
                found.append(f"{element.tag} style={value}")
        if element.tag == "style" and ("url(" in element.text().lower() or "@import" in element.text().lower()):
            found.append("<style> url(...) or @import")
    return found
