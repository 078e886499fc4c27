"""Extracts the training corpus from Debian packages into data/train.txt and
data/val.txt (documents separated by a line holding <|endoftext|>).

Sources (see SOURCES.md): Jane Austen's six novels from r-cran-janeaustenr
(read through Rscript) and the King James Bible from bible-kjv-text (read
through the bible program of bible-kjv). The last VAL_SHARE of every
document is held out for validation.
"""

import argparse
import os
import re
import subprocess

AUSTEN = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]
VAL_SHARE = 0.04
DOC_SEP = "\n<|endoftext|>\n"


def austen_lines(name):
    out = subprocess.run(["Rscript", "-e", "writeLines(janeaustenr::%s)" % name], check=True,
                         capture_output=True, text=True, encoding="utf-8").stdout
    return out.split("\n")


def paragraphs(lines):
    """Hard-wrapped lines to paragraphs: blank lines separate them."""
    paras, cur = [], []
    for ln in lines + [""]:
        ln = ln.strip()
        if ln:
            cur.append(ln)
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    # Gutenberg marks emphasis with underscores and ends sentences with two spaces
    return [re.sub(" {2,}", " ", p.replace("_", "")) for p in paras]


def bible_books():
    """The KJV as one paragraph per chapter, grouped by book."""
    # -f turns pretty-printing off: one verse a line, "Ge1:1 In the beginning ..."
    out = subprocess.run([os.environ.get("BIBLE", "bible"), "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True,
                         encoding="utf-8").stdout
    books, cur_book, cur_ch, verses = [], None, None, []
    ref = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
    for ln in out.split("\n"):
        m = ref.match(ln.strip())
        if m:
            book, ch, text = m.group(1), m.group(2), m.group(4)
            if (book, ch) != (cur_book, cur_ch):
                if verses:
                    books[-1][1].append(" ".join(verses))
                verses = []
                if book != cur_book:
                    books.append((book, []))
                cur_book, cur_ch = book, ch
            verses.append(text.strip())
        elif ln.strip() and verses:
            verses.append(ln.strip())  # a verse's continuation line
    if verses:
        books[-1][1].append(" ".join(verses))
    return [(name, [re.sub(" {2,}", " ", c) for c in chs]) for name, chs in books]


def split(paras):
    n_val = max(1, int(len(paras) * VAL_SHARE))
    return paras[:-n_val], paras[-n_val:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="data")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    train, val = [], []
    for name in AUSTEN:
        tr, va = split(paragraphs(austen_lines(name)))
        train.append("\n\n".join(tr))
        val.append("\n\n".join(va))
    # the Bible's 66 books as 9 documents of consecutive books, each split the same way
    books = bible_books()
    assert len(books) == 66, "expected 66 books of the KJV, got %d" % len(books)
    for g in range(0, 66, 8):
        chapters = []
        for name, chs in books[g:g + 8]:
            chapters.extend(chs)
        tr, va = split(chapters)
        train.append("\n\n".join(tr))
        val.append("\n\n".join(va))
    for fname, docs in (("train.txt", train), ("val.txt", val)):
        with open(os.path.join(a.out, fname), "w", encoding="utf-8") as f:
            f.write(DOC_SEP.join(docs) + "\n")
        print("corpus: %s %d bytes in %d documents" % (fname, sum(len(d.encode()) for d in docs), len(docs)))


if __name__ == "__main__":
    main()
