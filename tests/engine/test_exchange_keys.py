"""collective_all_reduce's instance-key spaces: one per model layout in a
process, so trainers of different models never meet on a key whose shape
TensorFlow has fixed. A second-model run across worker processes is in
test_multiworker (test_a_second_model_in_the_same_worker_processes_...)."""
import collections
import zlib

import pytest

from towertrain.engine.exchange import keys as collective_keys

Var = collections.namedtuple("Var", "dtype shape")


def _layout(n):
    return [Var("float32", (n,)), Var("float32", (3, 3))]


def _hash_space(variables):
    text = ";".join(f"{v.dtype}{tuple(v.shape)}" for v in variables)
    return zlib.crc32(text.encode()) % collective_keys.KEY_SPACES


def _two_layouts_whose_hashes_meet():
    seen = {}
    for n in range(1, 10 * collective_keys.KEY_SPACES):
        space = _hash_space(_layout(n))
        if space in seen:
            return _layout(seen[space]), _layout(n)
        seen[space] = n
    raise AssertionError("no two layouts share a hash space")  # pigeonhole: unreachable


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    monkeypatch.setattr(collective_keys, "_LAYOUT_OF_SPACE", {})


def test_one_layout_keeps_its_space():
    a = _layout(7)
    first = collective_keys.key_space(a)
    assert first == _hash_space(a) * collective_keys.KEY_SPACE_SIZE
    assert collective_keys.key_space(_layout(7)) == first  # a second trainer of that model


def test_two_layouts_whose_hashes_meet_get_different_spaces():
    a, b = _two_layouts_whose_hashes_meet()
    base_a, base_b = collective_keys.key_space(a), collective_keys.key_space(b)
    assert base_a == _hash_space(a) * collective_keys.KEY_SPACE_SIZE
    assert base_b == (_hash_space(b) + 1) % collective_keys.KEY_SPACES * collective_keys.KEY_SPACE_SIZE
    assert collective_keys.key_space(a) == base_a and collective_keys.key_space(b) == base_b
    # Every key of one space stays below the next space's base, and below 2**31.
    top = max(collective_keys.KEYS.values()) + 1000 * 1000 // 2 + 1000
    assert top < collective_keys.KEY_SPACE_SIZE
    assert (collective_keys.KEY_SPACES - 1) * collective_keys.KEY_SPACE_SIZE + top < 2**31


def test_a_process_out_of_spaces_says_so(monkeypatch):
    monkeypatch.setattr(collective_keys, "KEY_SPACES", 2)
    collective_keys.key_space(_layout(1))
    collective_keys.key_space(_layout(2))
    with pytest.raises(ValueError, match="2 different models in one process use up"):
        collective_keys.key_space(_layout(3))
