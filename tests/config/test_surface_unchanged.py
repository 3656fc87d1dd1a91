"""The user's surface is what it was before the settings moved beside their
readers (tests/config/surface_before/, written by tests/helpers/surface.py on
the commit before the move): the generated flag reference, --helpfull, the
public Params fields, the tf_cnn_benchmarks flag table and every refusal
message, wherever its check now lives. Order is free where grouping decides
it; each flag stays under its heading.

A deliberate change of the surface regenerates the copy:
    python tests/helpers/surface.py tests/config/surface_before
"""
import os
import re

import pytest

from helpers import surface

BEFORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "surface_before")


def _before(name):
    with open(os.path.join(BEFORE, name), encoding="utf-8") as f:
        return f.read()


def _unmatched(templates, others):
    """The templates no template of `others` can say: {…} there stands for any
    text, so a check written once for many flags ("must be one of {…}") says
    what each flag's own check said ("must be one of strong, relaxed")."""
    patterns = [re.compile("^" + ".*".join(map(re.escape, t.split("{…}"))) + "$")
                for t in others]
    return sorted(t for t in templates if t not in others and
                  not any(p.match(t) for p in patterns))


def test_every_refusal_message_is_still_said_and_none_added():
    now = surface.refusals().splitlines()
    before = _before("refusals.txt").splitlines()
    assert _unmatched(before, now) == [], "refusal messages gone"
    assert _unmatched(now, before) == [], "refusal messages added"


@pytest.mark.parametrize("part", [p for p in surface.PARTS if p != "refusals.txt"])
def test_surface_part_unchanged(part):
    now = surface.MAKERS[part]()
    before = _before(part)
    if now != before:
        gone = sorted(set(before.splitlines()) - set(now.splitlines()))[:20]
        new = sorted(set(now.splitlines()) - set(before.splitlines()))[:20]
        pytest.fail(f"{part} changed:\n  before only: {gone}\n  now only: {new}")


def test_the_refusal_walk_finds_messages_in_any_module(tmp_path):
    """The walk reads raise ParamsError(...) and fail/_fail calls anywhere, an
    f-string's expressions as placeholders."""
    path = tmp_path / "checks.py"
    path.write_text("def check(self, fail):\n"
                    "    if self.x < 1:\n"
                    "        fail('x', self.x, f'must be >= 1, not {self.x}')\n"
                    "    raise errors.ParamsError('--y: ' + 'bad')\n")
    assert sorted(surface.message_templates(str(path))) == [
        "--y: bad", "must be >= 1, not {…}"]
