"""Every hand-written breakage (mutation/mutation_list.py) still says where it
applies: its place resolves to one definition of the current tree, its old
text occurs once there, and every test it names exists. Pure syntax: no
TensorFlow, no test run (mutation/mutations.py runs them)."""
import os
import shutil
import textwrap

import pytest

from helpers import bench_scripts

mutations = bench_scripts.load("mutations", bench_scripts.MUTATION)
locate = mutations.locate
At, File, Module = locate.At, locate.File, locate.Module
Mutation = mutations.MUTATIONS[0].__class__


def test_every_entry_resolves_to_one_place_and_names_tests_that_exist():
    assert mutations.check(mutations.MUTATIONS) == []


def test_entry_names_are_unique_and_every_entry_names_a_test():
    names = [m.name for m in mutations.MUTATIONS]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    assert [m.name for m in mutations.MUTATIONS if not m.tests] == []


def write(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))


@pytest.fixture
def tree(tmp_path):
    """A scratch product: `merge` defined in two modules named sum.py,
    `Ring.hop` once, a constant, a property with its setter, and a test file."""
    write(tmp_path, {
        "towertrain/exchange/sum.py": """\
            import math

            LIMIT = 4


            def merge(a, b):
                return a + b


            class Ring:
                def hop(self, x):
                    if x > LIMIT:
                        return x - 1
                    return x + 1
            """,
        "models/sum.py": """\
            def merge(a, b):
                return a + b
            """,
        "input_pipeline/feed.py": """\
            class Feed:
                @property
                def size(self):
                    return self._size

                @size.setter
                def size(self, value):
                    self._size = value
            """,
        "README.md": "Run it.\n",
        "tests/test_sum.py": """\
            import pytest


            def test_merge():
                pass


            class TestRing:
                def test_hop(self):
                    pass


            @pytest.mark.parametrize("n", [1, 2])
            def test_limit(n):
                pass
            """,
    })
    return str(tmp_path)


def problems(root, place, old, tests=("tests/test_sum.py",)):
    return mutations.check([Mutation("m", place, old, "", list(tests))], root)


def test_a_place_and_its_tests_resolve_in_a_scratch_tree(tree):
    for place, old in [(At("Ring.hop"), "x - 1"), (At("LIMIT"), "4"),
                       (At("merge", module="exchange.sum"), "a + b"),
                       (At("merge", module="towertrain.exchange.sum"), "a + b"),
                       (At("Feed.size"), "self._size = value"),
                       (Module("exchange.sum"), "import math\n"), (File("README.md"), "it")]:
        assert problems(tree, place, old) == [], place
    tests = ["tests/test_sum.py::test_merge", "tests/test_sum.py::TestRing::test_hop",
             "tests/test_sum.py::test_limit[2]"]
    assert problems(tree, At("Ring.hop"), "x - 1", tests) == []


@pytest.mark.parametrize("place,old,why", [
    (At("Ring.spin"), "x - 1", "defined nowhere"),
    (At("merge"), "a + b", "defined in several modules"),
    (At("merge", module="sum"), "a + b", "defined in several modules"),
    (At("merge", module="ring"), "a + b", "the module matches none"),
    (At("Ring.hop"), "x * 2", "not there"),
    (At("Ring.hop"), "return x", "occurs 2 times"),
    (At("merge", module="models.sum"), "LIMIT", "not there"),  # in the file, not in merge
    (Module("sum"), "a + b", "matches 2 modules"),
    (File("README.md"), "walk", "not there"),
    (File("docs/gone.md"), "it", "does not exist"),
])
def test_a_missing_or_ambiguous_place_or_text_fails_the_check(tree, place, old, why):
    found = problems(tree, place, old)
    assert len(found) == 1 and why in found[0], found


@pytest.mark.parametrize("test_id,why", [
    ("tests/test_gone.py", "no such test file"),
    ("tests/test_sum.py::test_split", "test_split is not defined"),
    ("tests/test_sum.py::TestRing::test_spin", "test_spin is not defined"),
    ("tests/test_sum.py::test_merge[1]", "not parametrized"),
    ("tests/test_sum.py::test_limit[3]", "no parametrization [3]"),
])
def test_a_named_test_that_does_not_exist_fails_the_check(tree, test_id, why):
    found = problems(tree, At("Ring.hop"), "x - 1", [test_id])
    assert len(found) == 1 and why in found[0], found


def test_a_moved_file_still_resolves_and_a_reindented_block_is_patched_alike(tree):
    os.makedirs(os.path.join(tree, "towertrain", "engine"))
    shutil.move(os.path.join(tree, "towertrain", "exchange", "sum.py"),
                os.path.join(tree, "towertrain", "engine", "sum.py"))
    assert problems(tree, At("Ring.hop"), "x - 1") == []
    assert problems(tree, At("merge", module="sum"), "a + b") != []  # still two
    # hop's body written as it was at module level: found 8 spaces deeper.
    patch = locate.resolve(At("Ring.hop"), "if x > LIMIT:\n    return x - 1\n",
                           "if x >= LIMIT:\n    return x - 1\n", root=tree)
    locate.apply(patch, tree)
    with open(os.path.join(tree, patch.path), encoding="utf-8") as f:
        assert "        if x >= LIMIT:\n            return x - 1\n" in f.read()
    assert patch.path == "towertrain/engine/sum.py"


def test_where_names_the_smallest_definition_around_the_text(tree):
    index = locate.Index(tree)
    assert locate.enclosing("towertrain/exchange/sum.py", "x - 1", index) == At("Ring.hop")
    assert locate.enclosing("models/sum.py", "a + b", index) == At("merge", "models.sum")
    assert locate.enclosing("towertrain/exchange/sum.py", "import math", index) == Module(
        "exchange.sum")


def test_relocate_re_places_an_entry_whose_definition_was_renamed(tree):
    relocate = bench_scripts.load("relocate", bench_scripts.MUTATION)
    path = os.path.join(tree, "towertrain", "exchange", "sum.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("def hop(", "def step("))
    entries = [Mutation("renamed", At("Ring.hop"), "x - 1", "x", []),
               Mutation("gone", At("Ring.hop"), "x * 2", "x", []),
               Mutation("kept", At("LIMIT"), "4", "5", [])]
    moved, left = relocate.new_places(entries, locate.Index(tree))
    assert moved == {"renamed": At("Ring.step")}
    assert [why.split(":")[0] for why in left] == ["gone"]
    source = ('MUTATIONS = [\n    Mutation(\n        "renamed", At("Ring.hop"),\n'
              '        "x - 1", "x", []),\n    Mutation("kept", At("LIMIT"), "4", "5", [])]\n')
    assert relocate.rewrite(source, moved) == source.replace('At("Ring.hop")',
                                                             'At("Ring.step")')


def test_relocate_follows_a_test_file_moved_to_another_folder(tree):
    relocate = bench_scripts.load("relocate", bench_scripts.MUTATION)
    os.makedirs(os.path.join(tree, "tests", "exchange"))
    shutil.move(os.path.join(tree, "tests", "test_sum.py"),
                os.path.join(tree, "tests", "exchange", "test_sum.py"))
    entries = [Mutation("m", At("Ring.hop"), "x - 1", "x", ["tests/test_sum.py::test_merge"])]
    moves = relocate.test_file_moves(entries, tree)
    assert moves == {"tests/test_sum.py": "tests/exchange/test_sum.py"}
    source = 'SUM = T + "test_sum.py::"\nA = ["tests/test_sum.py", "tests/test_sum.pyc"]\n'
    assert relocate.rewrite_test_files(source, moves) == (
        'SUM = T + "exchange/test_sum.py::"\nA = ["tests/exchange/test_sum.py", '
        '"tests/test_sum.pyc"]\n')


def test_a_sample_takes_every_wing_in_turn():
    sample = mutations.spread(mutations.MUTATIONS, 30)
    index = locate.Index()
    wings = [mutations.wing(locate.resolve(m.place, m.old, m.new, index)) for m in sample]
    assert len({m.name for m in sample}) == 30
    assert max(wings.count(w) for w in wings) - min(wings.count(w) for w in wings) <= 1
    assert {"engine", "state", "models", "input_pipeline", "outside the product"} <= set(wings)


def test_a_text_moved_to_a_shallower_block_takes_the_shift_that_starts_its_line(tree):
    """Fewer leading spaces also match inside the line: 4, 5, ... 8 removed
    would all be found; the one that starts the line is the move."""
    patch = locate.resolve(At("merge", module="models.sum"), "        return a + b\n",
                           "        return a - b\n", root=tree)
    assert (patch.old, patch.new) == ("    return a + b\n", "    return a - b\n")


def test_every_generated_mutants_module_resolves_and_its_tests_exist():
    generated = bench_scripts.load("generated_mutants", bench_scripts.MUTATION)
    index = locate.Index()
    for name, module in generated.MODULES.items():
        assert index.module_path(module["module"]).endswith(".py"), name
        missing = [part for part in module["tests"] + module.get("earlier", [])
                   if part.startswith("tests/") and not generated._test_exists(locate.ROOT, part)]
        assert missing == [], name
