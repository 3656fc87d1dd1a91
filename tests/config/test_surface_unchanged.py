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

import pytest

from helpers import surface

BEFORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "surface_before")


def _before(name):
    with open(os.path.join(BEFORE, name), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("part", surface.PARTS)
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
