// A tiny, safe markdown subset for the model's answers: paragraphs (a single newline is a line break),
// fenced and inline code, **bold**, *italic*, "- " and "1. " lists, "# " headings shown as bold lines,
// and [links](https://...) to http(s) only. Every node is built with createElement and text nodes:
// nothing the model writes is ever parsed as HTML, so `<img onerror=...>` stays visible text.

const FENCE = /^\s*```/;
const ITEM = /^\s*(?:([-*+])|(\d{1,9})[.)])\s+(.*)$/;
const HEADING = /^\s{0,3}#{1,6}\s+(.*)$/;
const INLINE = /`([^`\n]+)`|\*\*([^\n]+?)\*\*|\*([^*\s](?:[^*\n]*[^*\s])?)\*|\[([^\]\n]+)\]\(([^()\s]+)\)/g;

function el(tag, children = []) {
  const node = document.createElement(tag);
  node.append(...children);
  return node;
}

/** The link target when it is an absolute http(s) URL, else null (javascript:, data:, relative...). */
export function safeHref(href) {
  try {
    const url = new URL(href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** Inline markup of one line as DOM nodes. */
export function inline(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    last = match.index + match[0].length;
    const [whole, code, bold, italic, label, href] = match;
    if (code !== undefined) nodes.push(el("code", [code]));
    else if (bold !== undefined) nodes.push(el("strong", inline(bold)));
    else if (italic !== undefined) nodes.push(el("em", inline(italic)));
    else {
      const safe = safeHref(href);
      if (safe === null) {
        nodes.push(document.createTextNode(whole));
        continue;
      }
      const link = el("a", inline(label));
      link.href = safe;
      link.rel = "noopener noreferrer nofollow";
      link.target = "_blank";
      nodes.push(link);
    }
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

function lines(texts) {
  const nodes = [];
  texts.forEach((line, index) => {
    if (index > 0) nodes.push(el("br"));
    nodes.push(...inline(line));
  });
  return nodes;
}

/** ``text`` as a fragment of block elements. */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  const all = text.split(/\r?\n/);
  let i = 0;
  while (i < all.length) {
    const line = all[i];
    if (FENCE.test(line)) {
      const code = [];
      i += 1;
      while (i < all.length && !FENCE.test(all[i])) code.push(all[i++]);
      i += 1; // the closing fence (or the end while it is still streaming)
      fragment.append(el("pre", [el("code", [code.join("\n")])]));
    } else if (line.trim() === "") {
      i += 1;
    } else if (ITEM.test(line)) {
      const ordered = ITEM.exec(line)[2] !== undefined;
      const list = el(ordered ? "ol" : "ul");
      while (i < all.length) {
        const item = ITEM.exec(all[i]);
        if (item === null || (item[2] !== undefined) !== ordered) break;
        list.append(el("li", inline(item[3])));
        i += 1;
      }
      fragment.append(list);
    } else if (HEADING.test(line)) {
      fragment.append(el("p", [el("strong", inline(HEADING.exec(line)[1]))]));
      i += 1;
    } else {
      const paragraph = [];
      while (i < all.length && all[i].trim() !== "" && !FENCE.test(all[i]) && !ITEM.test(all[i])) {
        paragraph.push(all[i++]);
      }
      fragment.append(el("p", lines(paragraph)));
    }
  }
  return fragment;
}
