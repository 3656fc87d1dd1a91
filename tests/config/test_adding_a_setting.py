"""Adding a setting is one edit: a field in the section of the component that
reads it (docs/architecture.md, "Adding a setting"). In a scratch copy of the
product, one field added to one section appears in --help and --helpfull, in
Params' fields, in the generated flag reference and in the run record's
settings, with no other file edited."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION_FILE = os.path.join("towertrain", "recipe", "settings.py")
# The field, added at the end of the Clipping section's fields.
ANCHOR = '''        training_only=True, recorded=COMPARED)

    def __bool__(self):'''
NEW_FIELD = '''        training_only=True, recorded=COMPARED)
    scratch_clip_ratio: float = setting(
        0.5, "A scratch setting added by a test.", training_only=True,
        recorded=ALWAYS)

    def __bool__(self):'''

REPORT = """
import contextlib, io, json, sys, typing
import towertrain
from towertrain.commands import flag_reference
from towertrain.config import params, settings
hints = typing.get_type_hints(params.Params)
print(json.dumps({
    "imported_from": towertrain.__file__,
    "field": [hints.get("scratch_clip_ratio").__name__,
              params.Params.__dataclass_fields__["scratch_clip_ratio"].default],
    "params_default": params.Params().scratch_clip_ratio,
    "reference": [line for line in flag_reference.markdown().splitlines()
                  if line.startswith("| `--scratch_clip_ratio`")],
    "recorded": [s.name for s in settings.recorded()],
    "recorded_values": settings.recorded_values(lambda name: getattr(params.Params(), name)),
    "record": record_and_resume(),
}))
"""
# The run record's side, as the resume (towertrain.state.resume) does it: the
# recipe's sections give the values written to the record, and a resume that
# changes the setting is refused, naming it.
RECORD = """
import types
from towertrain.config import declare
from towertrain.engine.exchange_settings import Exchange
from towertrain.errors import CheckpointError
from towertrain.recipe import settings as recipe_settings
from towertrain.state import run_record
from towertrain.state.resume import contract


def record_and_resume():
    def state(value):
        p = params.Params(scratch_clip_ratio=value)
        return run_record.state_settings(*(declare.take(cls, p) for cls in (
            recipe_settings.Optimizer, recipe_settings.Precision, recipe_settings.Loss,
            recipe_settings.Clipping)), exchange)
    # The exchange's recorded settings (the wire's precision), as a plan has them.
    exchange = Exchange(variable_update="replicated", all_reduce_spec="pscpu")
    model = types.SimpleNamespace(name="m", output_shape=(None, 10), input_shape=(None, 8, 8, 3))
    record = run_record.record_of("trivial", "cifar10", "NHWC", model, state(0.5))
    contract.check_state_settings(record, state(0.5), "D")  # unchanged: resumes
    try:
        contract.check_state_settings(record, state(0.25), "D")
    except CheckpointError as err:
        return {"written": record.get("scratch_clip_ratio"), "refused": str(err)}
    return {"written": record.get("scratch_clip_ratio"), "refused": None}
"""


def _copy(tmp_path):
    # Laid out as installed (setup.py's package_dir): models/ and input_pipeline/
    # inside the package, so the copy imports none of the checkout's files.
    for folder, installed in (("towertrain", "towertrain"), ("models", "towertrain/models"),
                              ("input_pipeline", "towertrain/input_pipeline")):
        shutil.copytree(os.path.join(ROOT, folder), tmp_path / installed,
                        ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / SECTION_FILE
    text = path.read_text()
    assert text.count(ANCHOR) == 1, f"{SECTION_FILE} changed: update this test's anchor"
    path.write_text(text.replace(ANCHOR, NEW_FIELD))
    return tmp_path


def _run(copy, *args):
    env = dict(os.environ, PYTHONPATH=str(copy), TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_one_field_in_one_section_is_a_whole_setting(tmp_path):
    copy = _copy(tmp_path)
    found = json.loads(_run(copy, "-c", RECORD + REPORT).splitlines()[-1])
    assert found["imported_from"].startswith(str(copy)), found["imported_from"]
    assert found["field"] == ["float", 0.5] and found["params_default"] == 0.5
    assert found["reference"] == [
        "| `--scratch_clip_ratio` | float | `0.5` | A scratch setting added by a test. |"]
    assert "scratch_clip_ratio" in found["recorded"]
    assert found["recorded_values"]["scratch_clip_ratio"] == 0.5
    # Written to the run record, and a resume that changes it is refused.
    assert found["record"]["written"] == 0.5
    assert (found["record"]["refused"] or "").startswith(
        "--scratch_clip_ratio=0.25 but D was trained with --scratch_clip_ratio=0.5"), \
        found["record"]
    for flag in ("--help", "--helpfull"):
        shown = _run(copy, "-m", "towertrain", flag)
        assert "--scratch_clip_ratio" in shown and "A scratch setting added by a test." \
            in shown, flag
    # Given on the command line, it reaches Params (and --eval refuses it).
    refused = subprocess.run(
        [sys.executable, "-m", "towertrain", "--eval", "--train_dir=/nonexistent",
         "--scratch_clip_ratio=0.25"], cwd=copy, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=str(copy), TF_CPP_MIN_LOG_LEVEL="3"))
    assert "--scratch_clip_ratio=0.25: only applies to training" in refused.stderr, \
        refused.stderr[-2000:]


def test_the_run_record_checks_the_declared_recorded_settings_in_declaration_order():
    """The run record's settings are those declared `recorded=`, each after
    the setting whose mode it needs (the order a resume checks them in)."""
    from towertrain.config import declare, settings
    from towertrain.state import run_record
    declared = [s.name for s in settings.recorded()]
    assert list(run_record.STATE_SETTINGS) == declared
    for setting in settings.recorded():
        # Only a setting recorded where it applies needs its mode read first.
        if setting.recorded == declare.WHEN_APPLIES and setting.applies_with is not None:
            mode = setting.applies_with[0]
            assert declared.index(mode) < declared.index(setting.name), setting.name
