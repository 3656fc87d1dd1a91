"""A generated table inside a hand-written docs page: the lines between a
BEGIN and an END marker are the generator's, the prose around them a person's.
Shared by the pages' generators (params_doc, migration_doc)."""
import sys


def escape(text):
    """`text` as one Markdown table cell: white space folded, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def replace(text, lines, begin, end):
    """`text` with its part from `begin` to `end` replaced by `lines` (which
    hold both markers); appended where the page has no such part yet."""
    generated = "\n".join(lines)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + generated + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + generated + "\n"


def rewrite(argv, update, usage):
    """The generators' command line: `python -m MODULE PAGE` rewrites PAGE
    through `update`; anything else prints `usage` and returns 2."""
    if len(argv) != 2:
        print(usage, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(update(text))
    return 0
