"""Every integer flag at and past its bounds, through the command line: one
line naming the flag (exit 2), or a run that trains (exit 0), never a
traceback. The flags come from the declarations, so a new integer setting is
walked too."""
from towertrain.config import params, settings
from towertrain.engine.process import settings as process_settings
from towertrain.plan import settings as plan_settings

from helpers.cli import run_cases

# One short step when a value is accepted.
SHORT = {"model": "trivial", "device": "cpu", "batch_size": "2", "num_batches": "1",
         "num_warmup_batches": "0"}
# Past int64 both ways, and -1 (a count's "none" elsewhere).
EDGES = (-1, params.INT64_MAX + 1, params.INT64_MIN - 1)
# The declared ceilings: one above each is refused.
CEILINGS = {"tf_random_seed": plan_settings.MAX_SEED, "batch_size": plan_settings.MAX_BATCH_SIZE,
            "num_gpus": process_settings.MAX_TOWERS}


def _case(name, value):
    flags = {**SHORT, name: str(value)}
    return [f"--{flag}={text}" for flag, text in flags.items()]


def test_every_integer_flag_past_its_bounds_gives_one_line_or_trains(tmp_path):
    names = [s.name for s in settings.SETTINGS if s.type == settings.INTEGER]
    assert {"tf_random_seed", "num_gpus", "batch_size", "gradient_accumulation_steps"} <= set(
        names)
    cases = [(name, value) for name in names for value in EDGES]
    cases += [(name, ceiling + 1) for name, ceiling in CEILINGS.items()]
    results = run_cases("train", [_case(name, value) for name, value in cases],
                        tmp_path / "results.json", cwd=tmp_path, timeout=600)
    for (name, value), (code, out, err) in zip(cases, results):
        if code == 0:
            assert err == "", (name, value, err)
            continue
        assert code == 2 and out == "", (name, value, code, out[-500:], err[-2000:])
        assert err.startswith(f"towertrain: error: --{name}=") and err.count("\n") == 1, (
            name, value, err[-2000:])


def test_the_seed_is_refused_outside_numpys_range_with_the_range(tmp_path):
    results = run_cases("train", [_case("tf_random_seed", -1),
                                  _case("tf_random_seed", 2 ** 32)], tmp_path / "r.json",
                        cwd=tmp_path)
    for value, (code, out, err) in zip((-1, 2 ** 32), results):
        assert (code, out) == (2, "")
        assert err == (f"towertrain: error: --tf_random_seed={value}: must be in 0 .. "
                       "4294967295 (the seed of NumPy's, Python's and TensorFlow's "
                       "generators, which Keras sets together)\n")
